import {
  COST_TOO_HIGH_MESSAGE,
  RateLimitException,
  STORE_UNAVAILABLE_MESSAGE,
} from '../rate-limit.exception.js';
import { type Duration, type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import { parseDuration } from '../policy/validation.js';
import { type AcquireOptions } from './service-options.js';
import { type RateLimitDecision } from '../store-contract/store.interface.js';
import { type CallStore, type Limits } from '../store-contract/store-call.js';
import { type LeaseKeeper } from '../flow/lease-keeper.js';
import { type SlotWait, waitForSlot } from '../flow/wait-for-slot.js';
import { type RateLimitTelemetry } from '../telemetry/rate-limit-telemetry.js';

/**
 * What `acquire` resolves with: the allowing decision, plus `release()`, which frees the
 * concurrency leases it holds (renewed meanwhile) and does nothing for rate-only policies. Call
 * it once the work is done; more calls do nothing.
 */
export interface RateLimitPermit extends RateLimitDecision {
  release(): Promise<void>;
}

const NO_LEASE = () => Promise.resolve();

/** The permit of an allowing `decision` on `limits`: its leases held until `release()`. */
export function permitOf(
  leases: LeaseKeeper,
  limits: Limits,
  decision: RateLimitDecision,
): RateLimitPermit {
  const lease = leases.hold(limits, decision);
  const release = lease === undefined ? NO_LEASE : () => leases.release(lease);
  return { ...decision, release };
}

/**
 * Waits for a slot under every policy, up to `maxWait` (default: the longest period), and answers
 * with the store's allowing decision itself, which the caller may hand back to the store (its
 * arrival, its lease). Rejects with a `RateLimitException` when the call cannot proceed in time.
 * `strict`: the starts are spaced strictly (see flow/strict-spacing.ts); `begin`: what starts
 * the call, run in the same turn as the last check (see `SlotWait.begin`).
 */
export async function admit(
  store: CallStore,
  leases: LeaseKeeper,
  limits: Limits,
  options: AcquireOptions | undefined,
  where: string,
  telemetry: RateLimitTelemetry,
  strict = false,
  begin?: () => void,
): Promise<RateLimitDecision> {
  const maxWaitMs = resolveMaxWait(options?.maxWait, limits.policies, where);
  const signal = options?.signal;
  signal?.throwIfAborted();
  let waited = false;
  const onWaited: SlotWait['onWaited'] = telemetry.enabled
    ? (startedAt, outcome, decision) => {
        waited = outcome === 'waited';
        telemetry.waited(where, decision, startedAt, outcome);
      }
    : undefined;
  const decision = await waitForSlot(store, leases, limits, {
    maxWaitMs,
    strict,
    begin,
    onAbandon: signal && ((listener) => onAbort(signal, listener)),
    abandoned: () => signal?.reason,
    onWaited,
  });
  if (telemetry.enabled) telemetry.decided(where, decision, waited, 'event');
  if (!decision.allowed) throw new RateLimitException(rejectionMessage(decision), decision);
  return decision;
}

/** `maxWait` in ms: given (0 allowed), else the longest period among the policies. */
function resolveMaxWait(
  value: Duration | undefined,
  policies: readonly ResolvedPolicy[],
  where: string,
): number {
  if (value === undefined) return Math.max(...policies.map((p) => p.periodMs));
  return value === 0 || value === '0' ? 0 : parseDuration(value, 'maxWait', where);
}

function onAbort(signal: AbortSignal, listener: () => void): () => void {
  signal.addEventListener('abort', listener, { once: true });
  return () => signal.removeEventListener('abort', listener);
}

function rejectionMessage(decision: RateLimitDecision): string {
  if (decision.degraded === 'deny') return STORE_UNAVAILABLE_MESSAGE;
  if (decision.retryAfterMs === Infinity) return COST_TOO_HIGH_MESSAGE;
  return 'No slot within maxWait';
}

import { type StoreOperation } from '../store-contract/store-call.js';
import { type RateLimitDecision } from '../store-contract/store.interface.js';
import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import { type HealthChange } from '../store-contract/health-change.js';

/**
 * How a decision ended, as `rate_limit.decisions` counts it: `allowed`; `limited` (turned away);
 * `degraded` (the store failed and `onStoreError` answered: the memory fallback, allow or deny);
 * `shadow_limited` (let through only because the policies that rejected it are in shadow mode);
 * `waited` (allowed after waiting for a slot).
 */
export type DecisionOutcome = 'allowed' | 'limited' | 'degraded' | 'shadow_limited' | 'waited';

/** How a wait for a slot ended: the slot came, it could not come in time, or the caller left. */
export type WaitOutcome = 'waited' | 'limited' | 'abandoned';

/**
 * A change of the store's health, as `rate_limit.store.state_changes` counts it: the circuit
 * breaker of a server `open`s, lets one probe through (`half_open`) or `closed`s again; an outage
 * begins (`degraded`: `onStoreError` answers) or ends (`recovered`).
 */
export type StoreState = HealthChange;

/** Which store the module uses, as the `rate_limit.store` attribute names it. */
export type StoreKind = 'redis' | 'memory' | 'custom';

/**
 * Where the module reports what it does, as metrics and on the active trace span. The module
 * holds one: {@link NO_TELEMETRY} when telemetry is off or `@opentelemetry/api` is not installed,
 * else one that records through the API. Each method is cheap and never throws.
 */
export interface RateLimitTelemetry {
  /** False for {@link NO_TELEMETRY}: callers skip work whose only use is telemetry. */
  readonly enabled: boolean;
  /**
   * Counts a decision on `route` (a route label, or the service method); `waited` when it was
   * allowed after waiting for a slot. `onSpan` sets the decision as attributes of the active span
   * (a route's one decision) or, `'event'`, adds it as an event (a service call, one of many).
   */
  decided(
    route: string,
    decision: RateLimitDecision,
    waited: boolean,
    onSpan: 'attributes' | 'event',
  ): void;
  /**
   * Counts the decision `pending` resolves with, as {@link decided} does with `'event'`, on the
   * span active now; answers `pending` itself when there is nothing to record.
   */
  counted(route: string, pending: Promise<RateLimitDecision>): Promise<RateLimitDecision>;
  /** A wait for a slot that began at `startedAt` (`performance.now()`) ended now. */
  waited(route: string, decision: RateLimitDecision, startedAt: number, outcome: WaitOutcome): void;
  /** One call to the Redis or custom store (not the memory store), from `startedAt` to `endedAt` (`performance.now()`). */
  storeCall(op: StoreOperation, ok: boolean, startedAt: number, endedAt: number): void;
  /** A concurrency lease of `policy` taken (`+1`) or let go (`-1`). */
  leases(policy: ResolvedPolicy, change: 1 | -1): void;
  /** The block cache answered a request under `policies` without asking the store. */
  blockCacheAnswered(policies: readonly ResolvedPolicy[]): void;
  /** The store's health changed. */
  storeState(state: StoreState): void;
}

/** Telemetry turned off: every method does nothing. */
class NoTelemetry implements RateLimitTelemetry {
  readonly enabled = false;
  decided(): void {}
  counted(_route: string, pending: Promise<RateLimitDecision>): Promise<RateLimitDecision> {
    return pending;
  }
  waited(): void {}
  storeCall(): void {}
  leases(): void {}
  blockCacheAnswered(): void {}
  storeState(): void {}
}

/** What the module uses when telemetry is off or `@opentelemetry/api` is not installed. */
export const NO_TELEMETRY: RateLimitTelemetry = new NoTelemetry();

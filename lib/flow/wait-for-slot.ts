import { algorithmOf } from '../algorithms/registry.js';
import { monotonicClock } from '../stores/clock.js';
import {
  leaseOf,
  leasesFullOf,
  outcomesPendingOf,
  slotAtOf,
  withPolicies,
} from '../stores/decision.js';
import { type CallStore, type Limits } from '../store-contract/store-call.js';
import { type RateLimitDecision } from '../store-contract/store.interface.js';
import { type LeaseKeeper } from './lease-keeper.js';
import { strictLimits } from './strict-spacing.js';

/** How long a call may wait for its slot, and how to tell that its caller went away. */
export interface SlotWait {
  readonly maxWaitMs: number;
  /**
   * Spaces the starts strictly (see strict-spacing.ts): no span of one period sees more than
   * `threshold` of them, however late each runs behind its slot.
   */
  readonly strict?: boolean;
  /**
   * Called once, in the same turn as the last check, when the call may start: `run()` starts its
   * function here, so that no other work (another call's function, say) runs between the check
   * and the start. Without it, the start is when the returned promise resolves.
   */
  readonly begin?: () => void;
  /**
   * How long a rejection that only requests still in flight cause (on a policy counting some
   * outcomes) may be waited out, when longer than `maxWaitMs`; such a wait ends as soon as those
   * requests' outcomes make room.
   */
  readonly outcomeWaitMs?: number;
  /** Subscribes to the caller going away (an aborted signal, a closed connection); returns how to unsubscribe. */
  readonly onAbandon?: (listener: () => void) => (() => void) | undefined;
  /** What the wait rejects with once its caller has gone. */
  readonly abandoned?: () => unknown;
  /**
   * Told once, as it ends, of a wait that slept at least once: when it began
   * (`performance.now()`), how it ended, and the last decision.
   */
  readonly onWaited?: (
    startedAt: number,
    outcome: 'waited' | 'limited' | 'abandoned',
    decision: RateLimitDecision,
  ) => void;
}

/**
 * A full concurrency limit held by another instance is asked again no sooner than this, plus up
 * to `POLL_JITTER_MS` at random, so that waiters spread out instead of asking in step. A release
 * on this instance wakes its waiters at once.
 */
const LEASE_POLL_MS = 50;
const LEASE_POLL_JITTER_MS = 25;

/**
 * Decides a call that may wait up to `maxWaitMs` for its slot instead of being rejected.
 *
 * When every policy is a bucket (token bucket, GCRA), one store call books the slot and says
 * when it begins: the caller sleeps until then, however long, with no further call, and callers
 * on every instance are let through in the order they booked. The sleep is measured from the
 * reply, so a call starts no earlier than its slot on the store's clock; it may start later, by
 * the reply's way back and any delay of the event loop. Otherwise the call is retried when
 * the rejecting policies say it may fit (`retryAfterMs`), and a full concurrency limit is asked
 * again when a lease is freed here or every 50-75 ms. A call that cannot fit within what is left
 * of `maxWaitMs` is answered with its rejection at once, as is a cost that can never fit.
 *
 * Resolves with the allowing decision, or the last rejection. Rejects with `abandoned()` when the
 * caller goes away meanwhile; a slot already booked for it is given back first.
 */
export async function waitForSlot(
  store: CallStore,
  leases: LeaseKeeper,
  limits: Limits,
  wait: SlotWait,
): Promise<RateLimitDecision> {
  const { keys, policies } = limits;
  const started = performance.now();
  const bookable = policies.every((p) => algorithmOf(p.algorithm).bookable);
  const strict = wait.strict === true ? strictLimits(limits) : undefined;
  const decided = strict?.limits ?? limits;
  // The answer names the caller's policies, not their stretched form.
  const answer = (d: RateLimitDecision) => (strict === undefined ? d : withPolicies(d, policies));
  let gone = false;
  let slept = false;
  let interrupt: (() => void) | undefined;
  let unsubscribe: (() => void) | undefined;
  const watch = () => {
    unsubscribe ??= wait.onAbandon?.(() => {
      gone = true;
      interrupt?.();
    });
  };
  // From the start: the caller may go while the first store call is under way.
  watch();
  try {
    for (;;) {
      const elapsedMs = performance.now() - started;
      const leftMs = wait.maxWaitMs - elapsedMs;
      // Nothing to book once no wait for a rate is left (a route that only waits for outcomes):
      // a consume, which a local block may answer.
      const sentAt = performance.now();
      const decision =
        bookable && leftMs > 0
          ? await store.execute({ op: 'reserve', limits: decided, maxWaitMs: leftMs })
          : await store.execute({ op: 'consume', limits: decided });
      if (decision.allowed) {
        // The wait runs from the reply, so the call starts at its slot or after, never before.
        // A timer may fire up to a millisecond early: then it sleeps the rest.
        const waitMs = decision.waitMs ?? 0;
        const slot = performance.now() + waitMs;
        for (let left = waitMs; left > 0 && !gone; left = slot - performance.now()) {
          slept = true;
          await pause(left, (wake) => (interrupt = wake));
        }
        if (gone) {
          await giveBack(store, decided, decision);
          if (slept) wait.onWaited?.(started, 'abandoned', decision);
          throw wait.abandoned?.();
        }
        if (strict !== undefined && decision.degraded !== 'allow') {
          if (lateMs(decision, sentAt, waitMs) > strict.lateLimitMs) {
            // Too late to start: the slot passes unused and the call books another. Giving the
            // slot back could let a later booking start closer than the spacing allows.
            await freeLease(store, decided, decision);
            slept = true;
            continue;
          }
        }
        wait.begin?.();
        if (slept) wait.onWaited?.(started, 'waited', decision);
        return answer(decision);
      }
      // `'allow'` and `'deny'` answer for a failing store; waiting would not change them.
      const next =
        decision.degraded !== undefined && decision.degraded !== 'memory'
          ? undefined
          : nextTry(decision, leftMs, (wait.outcomeWaitMs ?? 0) - elapsedMs);
      if (next === undefined) {
        if (slept) wait.onWaited?.(started, 'limited', decision);
        return answer(decision);
      }
      if (gone) {
        if (slept) wait.onWaited?.(started, 'abandoned', decision);
        throw wait.abandoned?.();
      }
      slept = true;
      await pause(next.ms, (wake) => (interrupt = wake), next.onLease ? leases : undefined, keys);
      if (gone) {
        wait.onWaited?.(started, 'abandoned', decision);
        throw wait.abandoned?.();
      }
    }
  } finally {
    unsubscribe?.();
  }
}

/**
 * How late a call starting now runs behind the slot `decision` booked. Where the store placed the
 * slot on this process's clock, that is exact, up to the estimate of the store's clock (early by
 * a reply's quickest way back). Otherwise the whole time since the decision went out (`sentAt`)
 * counts, less the wait the store gave: the store decided after that, so this is never less than
 * the truth, though it counts the time the call waited to reach the store too (`waitMs` is rounded
 * up to the millisecond; the sleep was too).
 */
function lateMs(decision: RateLimitDecision, sentAt: number, waitMs: number): number {
  const slotAt = slotAtOf(decision);
  if (slotAt !== undefined) return monotonicClock() - slotAt;
  return performance.now() - sentAt - Math.max(waitMs - 1, 0);
}

/**
 * Undoes an allowed decision nobody will use: the rate policies get their count back, and a
 * lease is freed (a refund would free the newest lease, not necessarily this one). Failures are
 * ignored: the slot then passes unused, and a lease expires.
 */
async function giveBack(
  store: CallStore,
  limits: Limits,
  decision: RateLimitDecision,
): Promise<void> {
  const { keys, policies, costs, ledgers } = limits;
  const rateCosts = policies.map((p, i) => (algorithmOf(p.algorithm).holdsLeases ? 0 : costs[i]));
  const undo: Array<Promise<unknown>> = [];
  if (rateCosts.some((c) => c > 0)) {
    const rates = { keys, policies, costs: rateCosts, ledgers };
    undo.push(store.execute({ op: 'refund', limits: rates, of: decision, counted: costs }));
  }
  if (leaseOf(decision) !== undefined) {
    undo.push(store.execute({ op: 'release', limits, of: decision }));
  }
  await Promise.allSettled(undo);
}

/** Frees the lease an allowed decision took, if it took one; failures are ignored, as above. */
async function freeLease(
  store: CallStore,
  limits: Limits,
  decision: RateLimitDecision,
): Promise<void> {
  if (leaseOf(decision) === undefined) return;
  await store.execute({ op: 'release', limits, of: decision }).catch(() => undefined);
}

/**
 * When to ask again after a rejection, or undefined when it cannot fit in time. Requests in flight
 * that alone fill a policy are waited for as a full concurrency limit is, within `outcomeLeftMs`.
 */
function nextTry(
  decision: RateLimitDecision,
  leftMs: number,
  outcomeLeftMs: number,
): { ms: number; onLease: boolean } | undefined {
  if (decision.retryAfterMs === Infinity) return undefined;
  let rateMs = 0;
  let leasesFull = false;
  let inFlight = false;
  for (const p of decision.policies) {
    if (p.allowed) continue;
    if (leasesFullOf(p)) {
      leasesFull = true;
    } else if (outcomesPendingOf(p)) {
      inFlight = true;
    } else if (p.retryAfterMs > rateMs) {
      rateMs = p.retryAfterMs;
    }
  }
  const budgetMs = inFlight && !leasesFull ? Math.max(leftMs, outcomeLeftMs) : leftMs;
  if ((rateMs > 0 && rateMs > leftMs) || budgetMs <= 0) return undefined;
  if (!leasesFull && !inFlight) return { ms: rateMs, onLease: false };
  const pollMs = LEASE_POLL_MS + Math.random() * LEASE_POLL_JITTER_MS;
  return { ms: Math.max(rateMs, Math.min(budgetMs, pollMs)), onLease: true };
}

/** Sleeps `ms`, or less if woken: by `bind`'s function, or by a lease freed on one of `keys`. */
function pause(
  ms: number,
  bind: (wake: () => void) => void,
  leases?: LeaseKeeper,
  keys?: readonly string[],
): Promise<void> {
  return new Promise((resolve) => {
    let stop: (() => void) | undefined;
    const wake = () => {
      clearTimeout(timer);
      stop?.();
      resolve();
    };
    const timer = setTimeout(wake, ms);
    bind(wake);
    if (leases !== undefined) stop = leases.onRelease(keys!, wake);
  });
}

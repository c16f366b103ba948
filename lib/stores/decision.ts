import { ms, NEVER, ON_OUTCOME, ON_RELEASE, ON_RELEASE_RETRY_US } from '../algorithms/algorithm.js';
import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import {
  type PolicyDecision,
  type RateLimitDecision,
  type StoreErrorPolicy,
} from '../store-contract/store.interface.js';

/** One policy's answer as the algorithms give it: `retryAfterMs` -1 (`NEVER`) means never. */
export function policyDecision(
  policy: ResolvedPolicy,
  allowed: boolean,
  remaining: number,
  retryAfterMs: number,
  resetAfterMs: number,
): PolicyDecision {
  return {
    policy,
    allowed,
    limit: policy.threshold,
    remaining,
    resetAfterMs,
    retryAfterMs: retryAfterMs === NEVER ? Infinity : retryAfterMs,
  };
}

/**
 * The answers of policies full of leases, where only a release can make room (`ON_RELEASE`). Kept
 * aside, not on the answer, so that answers stay plain data to compare and serialise; a copy of a
 * decision that keeps its answers keeps this too.
 */
const LEASES_FULL = new WeakSet<PolicyDecision>();

/**
 * Whether this answer rejected because its policy's leases are all held: a release may make room
 * at any moment, so its `retryAfterMs` is no promise, and a caller that waits should ask again as
 * soon as one is freed. False for answers that did not come from a store reply.
 */
export function leasesFullOf(answer: PolicyDecision): boolean {
  return LEASES_FULL.has(answer);
}

/** The answers of policies that only requests in flight fill (`ON_OUTCOME`), kept as LEASES_FULL is. */
const OUTCOMES_PENDING = new WeakSet<PolicyDecision>();

/**
 * Whether this answer rejected only because of requests counted whose outcome is not known yet,
 * on a policy that counts some outcomes: no lock-out started, and their outcomes may make room at
 * any moment, so a caller that waits should ask again soon. False for answers not from a store.
 */
export function outcomesPendingOf(answer: PolicyDecision): boolean {
  return OUTCOMES_PENDING.has(answer);
}

/**
 * The decision a reply of `decide.lua` (or of its twin, `decide.ts`) stands for: `{ allowed, then
 * allowed, remaining, retry_after_us, reset_after_ms per policy, then the time (µs), then the lease
 * id if one was taken }`. An allowed policy's retry time is 0, except in a reservation, where it is
 * the wait until the slot it booked (see {@link RateLimitDecision.waitMs}).
 */
export function decisionFromReply(
  reply: readonly number[],
  policies: readonly ResolvedPolicy[],
  clockOffsetUs?: number,
): RateLimitDecision {
  const answers: PolicyDecision[] = new Array(policies.length);
  let waitMs = 0;
  let waitUs = 0;
  let shortestUs = Infinity;
  for (let i = 0, r = 1; i < policies.length; i++, r += 4) {
    const allowed = reply[r] === 1;
    const full = reply[r + 2] === ON_RELEASE;
    const inFlight = reply[r + 2] === ON_OUTCOME;
    const retryUs = full || inFlight ? ON_RELEASE_RETRY_US : reply[r + 2];
    let retryMs = retryUs === NEVER ? NEVER : ms(retryUs);
    if (!allowed && retryUs > 0 && retryUs < shortestUs) shortestUs = retryUs;
    if (allowed) {
      if (retryMs > waitMs) waitMs = retryMs;
      if (retryUs > waitUs) waitUs = retryUs;
      retryMs = 0;
    }
    answers[i] = policyDecision(policies[i], allowed, reply[r + 1], retryMs, reply[r + 3]);
    if (full) LEASES_FULL.add(answers[i]);
    else if (inFlight) OUTCOMES_PENDING.add(answers[i]);
  }
  const at = 1 + 4 * policies.length;
  const precise = shortestUs < Infinity ? shortestUs : undefined;
  const decision = combineDecisions(reply[0] === 1, answers, reply[at], reply[at + 1], precise);
  if (waitMs > 0 && decision.allowed) (decision as { waitMs?: number }).waitMs = waitMs;
  if (clockOffsetUs !== undefined && decision.allowed) {
    SLOT_AT.set(decision, (reply[at] + waitUs - clockOffsetUs) / 1000);
  }
  return decision;
}

const SLOT_AT = new WeakMap<RateLimitDecision, number>();

/**
 * When the slot an allowed decision booked begins (its decision's own moment when it booked no
 * wait), on this process's monotonic clock (`monotonicClock`, ms), where the store can tell: the
 * memory store on the real clock, Redis once its replies have shown how its clock stands to
 * this process's. That estimate is never late, so the slot placed by it is never early.
 */
export function slotAtOf(decision: RateLimitDecision): number | undefined {
  return SLOT_AT.get(decision);
}

/**
 * A decision that remembers when the store made it, in microseconds of the store's own clock
 * (Redis `TIME`), so that exactly this request can be given back later. Private: it is no part
 * of what callers compare or serialise.
 */
class StoreDecision implements RateLimitDecision {
  readonly #atUs: number | undefined;
  readonly #lease: number | undefined;
  readonly #waitUs: number | undefined;
  // Present only when set, as on any other decision: `'degraded' in decision` stays meaningful.
  declare readonly degraded?: StoreErrorPolicy;
  declare readonly waitMs?: number;

  constructor(
    readonly allowed: boolean,
    readonly limit: number,
    readonly remaining: number,
    readonly resetAfterMs: number,
    readonly retryAfterMs: number,
    readonly policies: readonly PolicyDecision[],
    degraded: StoreErrorPolicy | undefined,
    atUs: number | undefined,
    lease: number | undefined,
    waitUs: number | undefined,
  ) {
    this.#atUs = atUs;
    this.#lease = lease;
    this.#waitUs = waitUs;
    if (degraded !== undefined) (this as { degraded?: StoreErrorPolicy }).degraded = degraded;
  }

  static arrivalOf(decision: RateLimitDecision): number | undefined {
    return #atUs in decision ? decision.#atUs : undefined;
  }

  static leaseOf(decision: RateLimitDecision): number | undefined {
    return #lease in decision ? decision.#lease : undefined;
  }

  static preciseWaitOf(decision: RateLimitDecision): number | undefined {
    const us = #waitUs in decision ? decision.#waitUs : undefined;
    return us === undefined ? undefined : us / 1000;
  }
}

/** When the store made `decision` (µs of its clock), if it says; see `refund`'s `atUs`. */
export const arrivalOf = StoreDecision.arrivalOf;

/** The lease id `decision` took, when one of its policies is a concurrency limit. */
export const leaseOf = StoreDecision.leaseOf;

/**
 * For a rejection, the shortest wait among its rejecting policies in fractional ms, exactly as the
 * store computed it (`retryAfterMs` is rounded up), when the store says: the Redis and memory
 * stores do, from the moment they decided.
 */
export const preciseWaitOf = StoreDecision.preciseWaitOf;

/** The same decision, marked as answered by `onStoreError` instead of the store. */
export function degradedDecision(
  decision: RateLimitDecision,
  degraded: StoreErrorPolicy,
): RateLimitDecision {
  return copyOf(decision, decision.policies, degraded, undefined);
}

/**
 * The same decision, its answers naming `policies` (the same policies, in the same order, in the
 * form the caller knows) instead of the ones the store was given.
 */
export function withPolicies(
  decision: RateLimitDecision,
  policies: readonly ResolvedPolicy[],
): RateLimitDecision {
  const answers = decision.policies.map((answer, i) => {
    const renamed = { ...answer, policy: policies[i] };
    if (LEASES_FULL.has(answer)) LEASES_FULL.add(renamed);
    if (OUTCOMES_PENDING.has(answer)) OUTCOMES_PENDING.add(renamed);
    return renamed;
  });
  const precise = preciseWaitOf(decision);
  const waitUs = precise === undefined ? undefined : precise * 1000;
  return copyOf(decision, answers, decision.degraded, waitUs);
}

/** A copy of `decision` with these answers, keeping when it was made and the lease it took. */
function copyOf(
  decision: RateLimitDecision,
  policies: readonly PolicyDecision[],
  degraded: StoreErrorPolicy | undefined,
  waitUs: number | undefined,
): RateLimitDecision {
  const { allowed, limit, remaining, resetAfterMs, retryAfterMs } = decision;
  const copy = new StoreDecision(
    allowed,
    limit,
    remaining,
    resetAfterMs,
    retryAfterMs,
    policies,
    degraded,
    arrivalOf(decision),
    leaseOf(decision),
    waitUs,
  );
  if (decision.waitMs !== undefined) (copy as { waitMs?: number }).waitMs = decision.waitMs;
  const slotAt = SLOT_AT.get(decision);
  if (slotAt !== undefined) SLOT_AT.set(copy, slotAt);
  return copy;
}

/** Folds the policies' answers into one decision; see {@link RateLimitDecision}. */
export function combineDecisions(
  allowed: boolean,
  policies: PolicyDecision[],
  atUs?: number,
  lease?: number,
  waitUs?: number,
): RateLimitDecision {
  let binding = policies[0];
  let retryAfterMs = 0;
  for (const decision of policies) {
    if (decision.remaining < binding.remaining) binding = decision;
    if (!allowed && !decision.allowed && decision.retryAfterMs > retryAfterMs) {
      retryAfterMs = decision.retryAfterMs;
    }
  }
  return new StoreDecision(
    allowed,
    binding.limit,
    binding.remaining,
    binding.resetAfterMs,
    retryAfterMs,
    policies,
    undefined,
    atUs,
    lease,
    waitUs,
  );
}

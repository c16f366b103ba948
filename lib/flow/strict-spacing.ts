import { type Algorithm } from '../algorithms/algorithm.js';
import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import { type Limits } from '../store-contract/store-call.js';

/**
 * Strict spacing: as whatever a call is made to sees the starts, no span of one `period` holds
 * more than `threshold` of them, across instances, however late a start runs behind its slot.
 *
 * A store decides on its own clock, and a call starts a little after its slot: the reply's way
 * back, a timer, a busy event loop. A late start followed by one on time bunches two starts
 * closer than the policy allows, so a window of one period can see `threshold + 1`. Strict calls
 * are therefore decided against the period stretched by a margin of one twelfth (so they keep
 * 12/13, about 92%, of the rate). A call that would start more than two thirds of that margin
 * after its slot does not start: its slot passes unused and it asks for a new one. The last third
 * is left for the way from the start to whatever is called, which may hold one call back more
 * than the next (a connection being opened, a busy network). Two thirds rather than half, because
 * a busy event loop (a module loaded on first use, a collection) makes starts late by tens of
 * milliseconds more often than a network varies by as much.
 *
 * How late a start runs is measured against the slot as the store placed it on this process's
 * clock: Redis's replies carry its time, and the best of them tell how its clock stands to this
 * process's, early by at most a reply's quickest way back (so a start may be judged that much less
 * late than it is, no more). Time spent before the store decided (a busy client, a burst queued
 * behind it) does not count: the slot was booked from the store's own now. Where the store cannot
 * place the slot (a simulated clock), the whole time since the call went out counts instead.
 *
 * Only the algorithms that bound every span of a period take part: the sliding log, and the two
 * buckets (whose `burst` is then what they allow at once, as without strict spacing). Fixed
 * windows and the sliding-window counter count in windows that already let up to twice
 * `threshold` through across a window's edge; they are decided as they are.
 */
const MARGIN_PARTS = 12;

const SPANS_BOUNDED: ReadonlySet<Algorithm> = new Set<Algorithm>([
  'sliding-window',
  'leaky-bucket',
  'token-bucket',
]);

/** Limits decided strictly, and how late a start may run behind its slot. */
export interface StrictLimits {
  readonly limits: Limits;
  readonly lateLimitMs: number;
}

// One stretched policy per policy object: policies are compiled once, so this is built once too.
const stretched = new WeakMap<ResolvedPolicy, ResolvedPolicy>();

function stretch(policy: ResolvedPolicy): ResolvedPolicy {
  let wider = stretched.get(policy);
  if (wider === undefined) {
    const periodUs = policy.periodUs + Math.floor(policy.periodUs / MARGIN_PARTS);
    wider = Object.freeze({ ...policy, periodUs, periodMs: periodUs / 1000 });
    stretched.set(policy, wider);
  }
  return wider;
}

/** The strict form of `limits`, or undefined when none of its policies takes part. */
export function strictLimits(limits: Limits): StrictLimits | undefined {
  let marginMs = Infinity;
  let policies: ResolvedPolicy[] | undefined;
  limits.policies.forEach((policy, i) => {
    if (!SPANS_BOUNDED.has(policy.algorithm)) return;
    const wider = stretch(policy);
    marginMs = Math.min(marginMs, (wider.periodUs - policy.periodUs) / 1000);
    policies ??= limits.policies.slice();
    policies[i] = wider;
  });
  if (policies === undefined) return undefined;
  return { limits: { ...limits, policies }, lateLimitMs: (marginMs * 2) / 3 };
}

import { type AlgorithmTwin, MAX_DEBT_US, ms, NEVER, type Params, us } from '../algorithm.js';

const interval = (p: Params) => Math.ceil(p.periodUs / p.limit);

/**
 * The record of `leaky-bucket.lua` (GCRA), whose value
 * `"<tat> <tat - at> <tat - since> <low> <tat - given>"` holds the same: the theoretical arrival
 * time, when it was last written, when the bucket was last empty, the least it has held since
 * then (µs of draining), and when it was last given something back (`since - 1` if not since).
 * The record bounds a late give-back.
 */
export interface Arrival {
  tat: number;
  at: number;
  since: number;
  low: number;
  given: number;
}

/** The arrival time now: never before now, since an empty bucket holds nothing. */
const tatAt = (stored: Arrival | undefined, now: number) => Math.max(stored?.tat ?? now, now);

/**
 * The arrival time `newTat` written now, after `tat`, as `gcra_write` records it: the record
 * starts afresh when the bucket was empty.
 */
function written(stored: Arrival | undefined, now: number, tat: number, newTat: number) {
  const fresh = stored === undefined || stored.tat <= now;
  const since = fresh ? now : stored.since;
  const low = fresh ? newTat - now : Math.min(stored.low, tat - now, newTat - now);
  const given = newTat < tat ? now : fresh ? now - 1 : stored.given;
  return {
    state: { tat: newTat, at: now, since, low, given },
    expiresAtUs: now + ms(newTat - now) * 1000,
  };
}

/** Twin of `leaky-bucket.lua`. All arithmetic is integer. */
export const leakyBucket: AlgorithmTwin<Arrival, number> = {
  check(stored, now, p, aheadUs) {
    const tat = tatAt(stored, now);
    if (p.cost > p.burst) return { allowed: false, retryAfterUs: NEVER, work: tat };
    const over = tat + p.cost * interval(p) - now - p.burst * interval(p);
    if (over <= 0) return { allowed: true, retryAfterUs: 0, work: tat };
    const allowed = aheadUs !== undefined && over <= aheadUs;
    return { allowed, retryAfterUs: us(over), work: tat };
  },

  after(now, p, tat) {
    const newTat = tat + p.cost * interval(p);
    return {
      remaining: Math.max(0, Math.floor((p.burst * interval(p) - (newTat - now)) / interval(p))),
      resetAfterMs: ms(newTat - now),
    };
  },

  commit(stored, now, p, tat) {
    return {
      ...written(stored, now, tat, tat + p.cost * interval(p)),
      ...leakyBucket.after(now, p, tat),
    };
  },

  // Moves the arrival time back no further than it would be had the request never been made: see
  // `refund` in `leaky-bucket.lua`.
  refund(stored, now, p, atUs) {
    const tat = tatAt(stored, now);
    let low = tat - now;
    if (tat > now && atUs !== undefined && (atUs < stored!.at || atUs <= stored!.given)) {
      if (atUs < stored!.since) return null;
      low = Math.min(stored!.low, low);
    }
    const newTat = Math.max(tat - p.cost * interval(p), tat - low);
    if (newTat <= now) return undefined;
    return written(stored, now, tat, newTat);
  },

  charge(stored, now, p) {
    const tat = tatAt(stored, now);
    const newTat = Math.min(tat + p.cost * interval(p), now + p.burst * interval(p) + MAX_DEBT_US);
    return written(stored, now, tat, newTat);
  },

  status(_stored, now, p, tat) {
    const remaining = Math.max(0, Math.floor((p.burst * interval(p) - (tat - now)) / interval(p)));
    return { remaining, resetAfterMs: ms(tat - now) };
  },
};

/**
 * Reference model of every algorithm, written from its definition over the full history of
 * allowed requests rather than from stored state. Slow and plain on purpose: the stores must
 * agree with it decision by decision.
 *
 * Where the arithmetic is integer (the log, the fixed window, GCRA), waits are found by
 * searching for the first whole millisecond at which the request would fit, instead of by the
 * closed forms the scripts use. The float algorithms (token bucket, sliding counter) state their
 * formulas once, in the same operation order as the scripts, because a float model can only be
 * compared bit for bit if it rounds the same way.
 */
import { type RateAlgorithm as Algorithm } from '../../lib/algorithms/algorithm.js';
import { indexOf } from '../support/calendar-windows.js';
import { settleHistory } from './settlement.js';

export interface ModelPolicy {
  algorithm: Algorithm;
  /** For a policy with `starts`, its longest window. */
  periodUs: number;
  limit: number;
  burst: number;
  /** The window algorithms only: the starts of windows by the calendar (µs), in place of `periodUs`. */
  starts?: readonly number[];
}

/**
 * One allowed request in a key's history, or a settlement's charge. A bucket's give-back is an
 * event of negative cost; a window's takes units off the events it gives back.
 */
export interface Event {
  t: number;
  cost: number;
  /**
   * Windows by the calendar: the last moment these units can have been spent, as the key knows
   * it (when it was last written; for units a sliding counter holds as its previous window's,
   * just before its window began), `t` until a write says otherwise. See {@link placeOf}.
   */
  last?: number;
  /** A bucket's give-back: when the request it gives back arrived, if known. */
  of?: number;
}

export interface ModelAnswer {
  allowed: boolean;
  remaining: number;
  /** -1: never. */
  retryAfterMs: number;
  resetAfterMs: number;
}

interface Verdict {
  allowed: boolean;
  retryAfterMs: number;
  /** Remaining and reset if this request is recorded. */
  after: () => { remaining: number; resetAfterMs: number };
  /** Remaining and reset if it is not. */
  now: () => { remaining: number; resetAfterMs: number };
}

const ms = (us: number) => Math.ceil(us / 1000);
const sum = (events: Event[]) => events.reduce((total, e) => total + e.cost, 0);

/** The first d in [lo, hi] with fits(d), for a monotone predicate. */
function firstTrue(lo: number, hi: number, fits: (d: number) => boolean): number {
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (fits(mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

// Sliding-window log: the requests allowed in (now - period, now].
function slidingWindow(history: Event[], now: number, p: ModelPolicy, cost: number): Verdict {
  const inWindow = (at: number) => sum(history.filter((e) => e.t > at - p.periodUs));
  const count = inWindow(now);
  const fitsAt = (d: number) => inWindow(now + d * 1000) + cost <= p.limit;
  const emptyAt = (d: number) => inWindow(now + d * 1000) === 0;
  const horizon = ms(p.periodUs) + 1;
  return {
    allowed: cost <= p.limit && count + cost <= p.limit,
    retryAfterMs: cost > p.limit ? -1 : firstTrue(1, horizon, fitsAt),
    after: () => ({ remaining: p.limit - count - cost, resetAfterMs: ms(p.periodUs) }),
    now: () => ({
      remaining: Math.max(p.limit - count, 0),
      resetAfterMs: firstTrue(0, horizon, emptyAt),
    }),
  };
}

/**
 * Where units count, by the calendar, whatever windows they were counted in before (an anchor
 * that moves): in the latest of the current window and the previous one that began at or before
 * the last moment they can have been spent; nowhere if neither did. With one calendar, that is
 * the window they were spent in.
 */
export function placeOf(e: Event, starts: readonly number[], now: number) {
  const k = indexOf(starts, now);
  const last = e.last ?? e.t;
  return last >= starts[k] ? 'current' : last >= starts[k - 1] ? 'previous' : undefined;
}

/**
 * What a write at `now` leaves a key's units, as the stores keep them: those of the current
 * window last written now; those of the previous window, for the sliding counter, which keeps
 * them, just before the current one began; the rest nowhere, whatever windows come later.
 */
export function restamp(history: Event[], p: ModelPolicy, now: number): void {
  const starts = p.starts!;
  const k = indexOf(starts, now);
  const keepsPrevious = p.algorithm === 'sliding-window-counter';
  for (const e of history) {
    const place = placeOf(e, starts, now);
    if (place === 'current') e.last = now;
    else if (place === 'previous' && keepsPrevious) e.last = starts[k] - 1;
    else e.last = -Infinity;
  }
}

// Fixed window: the requests allowed in the clock-aligned (or calendar) window that holds `now`.
function fixedWindow(history: Event[], now: number, p: ModelPolicy, cost: number): Verdict {
  const { starts } = p;
  const windowOf = (t: number) =>
    starts === undefined ? Math.floor(t / p.periodUs) : indexOf(starts, t);
  const count =
    starts === undefined
      ? sum(history.filter((e) => windowOf(e.t) === windowOf(now)))
      : sum(history.filter((e) => placeOf(e, starts, now) === 'current'));
  const horizon = ms(p.periodUs) + 1;
  const nextWindow = firstTrue(1, horizon, (d) => windowOf(now + d * 1000) !== windowOf(now));
  return {
    allowed: cost <= p.limit && count + cost <= p.limit,
    retryAfterMs: cost > p.limit ? -1 : nextWindow,
    after: () => ({ remaining: p.limit - count - cost, resetAfterMs: nextWindow }),
    now: () => ({
      remaining: Math.max(p.limit - count, 0),
      resetAfterMs: count === 0 ? 0 : nextWindow,
    }),
  };
}

// Sliding-window counter: previous window weighted by the part the sliding window still covers.
function slidingWindowCounter(
  history: Event[],
  now: number,
  p: ModelPolicy,
  cost: number,
): Verdict {
  // The windows: before [before, start), current [start, end), next [end, after).
  const P = p.periodUs;
  const k = p.starts === undefined ? 0 : indexOf(p.starts, now);
  const [before, start, end, after] =
    p.starts === undefined
      ? [now - (now % P) - P, now - (now % P), now - (now % P) + P, now - (now % P) + 2 * P]
      : p.starts.slice(k - 1, k + 3);
  const { starts } = p;
  const [current, previous] =
    starts === undefined
      ? [
          sum(history.filter((e) => e.t >= start && e.t < end)),
          sum(history.filter((e) => e.t >= before && e.t < start)),
        ]
      : [
          sum(history.filter((e) => placeOf(e, starts, now) === 'current')),
          sum(history.filter((e) => placeOf(e, starts, now) === 'previous')),
        ];
  const weighted = (previous * (end - now)) / (end - start);
  const allowed = cost <= p.limit && weighted + current + cost <= p.limit;
  let retryAfterMs = 0;
  if (cost > p.limit) retryAfterMs = -1;
  else if (!allowed) {
    const retryAt =
      current + cost <= p.limit
        ? end - ((p.limit - current - cost) * (end - start)) / previous
        : end + Math.max(0, after - end - ((p.limit - cost) * (after - end)) / current);
    retryAfterMs = Math.max(1, ms(retryAt - now));
  }
  const resetNow = current > 0 ? ms(after - now) : previous > 0 ? ms(end - now) : 0;
  return {
    allowed,
    retryAfterMs,
    after: () => ({
      remaining: Math.floor(p.limit - weighted - current - cost),
      resetAfterMs: ms(after - now),
    }),
    now: () => ({
      remaining: Math.max(0, Math.floor(p.limit - weighted - current)),
      resetAfterMs: resetNow,
    }),
  };
}

// Token bucket: replays the history. Full at the start; refills limit per period, continuously,
// and counts as full from the millisecond it would be full again. A charge may leave it in debt
// (negative tokens). A give-back fills it, up to full, and never past what it would hold had the
// request given back never been made: the tokens that request took would have spilt over the top
// whenever the bucket held more than `burst` less them. What the bucket knows of that: with
// nothing given back since the request nor written after its moment, exactly (below full);
// otherwise no more than `burst` less the most it has held since it was last full (`high`, since
// `since`); and nothing once it has been full since.
function tokenBucket(
  history: Event[],
  now: number,
  p: ModelPolicy,
  cost: number,
  trace?: Level[],
): Verdict {
  const refillMs = (tokens: number) => ms(((p.burst - tokens) * p.periodUs) / p.limit);
  const level = (left: number | undefined, at: number, t: number) => {
    if (left === undefined || t >= at + refillMs(left) * 1000) return p.burst;
    return Math.min(p.burst, left + (Math.max(t - at, 0) * p.limit) / p.periodUs);
  };
  let left: number | undefined;
  let at = 0;
  let since = 0;
  let high = 0;
  // When it was last given something back.
  let given = 0;
  for (const e of history) {
    const before = level(left, at, e.t);
    const full = before >= p.burst;
    let most = before;
    if (e.cost < 0 && !full && e.of !== undefined && (e.of < at || e.of <= given)) {
      if (e.of < since) {
        trace?.push({ before, after: before });
        continue;
      }
      most = Math.max(high, before);
    }
    const after =
      e.cost < 0
        ? Math.min(p.burst - (most - before), before - e.cost)
        : Math.min(p.burst, before - e.cost);
    [since, high, given] = full
      ? [e.t, after, e.t - 1]
      : [since, Math.max(high, before, after), given];
    if (after > before) given = e.t;
    trace?.push({ before, after });
    left = after;
    at = e.t;
  }
  const tokens = level(left, at, now);
  return {
    allowed: cost <= p.burst && tokens >= cost,
    retryAfterMs:
      cost > p.burst ? -1 : tokens >= cost ? 0 : ms(((cost - tokens) * p.periodUs) / p.limit),
    after: () => ({ remaining: Math.floor(tokens - cost), resetAfterMs: refillMs(tokens - cost) }),
    now: () => ({ remaining: Math.max(0, Math.floor(tokens)), resetAfterMs: refillMs(tokens) }),
  };
}

// GCRA: the theoretical arrival time after replaying the history; integer microseconds. A charge
// may take it past the burst, however far. A give-back takes it back, never before the event, and
// never before it would be had the request given back never been made: its lead would have
// drained away whenever the bucket held less than it. What the bucket knows of that: with nothing
// given back since the request nor written after its moment, exactly; otherwise no more than the
// least it has held since it was last empty (`low`, since `since`); and nothing once it has been
// empty since.
function leakyBucket(
  history: Event[],
  now: number,
  p: ModelPolicy,
  cost: number,
  trace?: Level[],
): Verdict {
  const interval = Math.ceil(p.periodUs / p.limit);
  const capacity = p.burst * interval;
  let tat = -Infinity;
  let at = 0;
  let since = 0;
  let low = 0;
  // When it was last given something back.
  let given = 0;
  for (const e of history) {
    const current = Math.max(tat, e.t);
    const empty = current <= e.t;
    let least = current - e.t;
    if (e.cost < 0 && !empty && e.of !== undefined && (e.of < at || e.of <= given)) {
      if (e.of < since) {
        trace?.push({ before: current - e.t, after: current - e.t });
        continue;
      }
      least = Math.min(low, least);
    }
    const next =
      e.cost < 0
        ? Math.max(current + e.cost * interval, current - least)
        : current + e.cost * interval;
    [since, low, given] = empty
      ? [e.t, next - e.t, e.t - 1]
      : [since, Math.min(low, current - e.t, next - e.t), given];
    if (next < current) given = e.t;
    trace?.push({ before: current - e.t, after: next - e.t });
    tat = next;
    at = e.t;
  }
  const levelAt = (t: number) => Math.max(tat, t) - t;
  const fitsAt = (d: number) => levelAt(now + d * 1000) + cost * interval <= capacity;
  const level = levelAt(now);
  const horizon = ms(Math.max(capacity, level + cost * interval)) + 1;
  return {
    allowed: cost <= p.burst && level + cost * interval <= capacity,
    retryAfterMs: cost > p.burst ? -1 : firstTrue(0, horizon, fitsAt),
    after: () => ({
      remaining: Math.floor((capacity - level - cost * interval) / interval),
      resetAfterMs: ms(level + cost * interval),
    }),
    now: () => ({
      remaining: Math.max(0, Math.floor((capacity - level) / interval)),
      resetAfterMs: ms(level),
    }),
  };
}

/** A bucket's level just before and just after an event: tokens, or for GCRA µs of draining. */
export interface Level {
  before: number;
  after: number;
}

/** Each event's levels, as the bucket `p` replays `history`. */
export function bucketLevels(history: Event[], p: ModelPolicy): Level[] {
  const trace: Level[] = [];
  (p.algorithm === 'token-bucket' ? tokenBucket : leakyBucket)(history, 0, p, 0, trace);
  return trace;
}

const ALGORITHMS: Record<Algorithm, typeof slidingWindow> = {
  'sliding-window': slidingWindow,
  'fixed-window': fixedWindow,
  'sliding-window-counter': slidingWindowCounter,
  'token-bucket': tokenBucket,
  'leaky-bucket': leakyBucket,
};

/**
 * A model of one store: per key, the history of allowed requests. `decide` answers like
 * `RateLimitStore.consume`: all policies must allow, or nothing is recorded.
 */
export class ReferenceModel {
  private readonly histories = new Map<string, Event[]>();

  decide(keys: string[], policies: ModelPolicy[], costs: number[], now: number) {
    const verdicts = policies.map((p, i) =>
      ALGORITHMS[p.algorithm](this.history(keys[i]), now, p, costs[i]),
    );
    const allowed = verdicts.every((v) => v.allowed);
    const answers: ModelAnswer[] = verdicts.map((v) => {
      const view = allowed ? v.after() : v.now();
      const retryAfterMs = allowed || v.allowed ? 0 : v.retryAfterMs;
      return { allowed: v.allowed, retryAfterMs, ...view };
    });
    if (allowed) {
      keys.forEach((key, i) => {
        if (policies[i].starts !== undefined) restamp(this.history(key), policies[i], now);
        this.history(key).push({ t: now, cost: costs[i] });
      });
    }
    return { allowed, answers };
  }

  /**
   * Settles the reservation that arrived at `at` (see `settlement.ts`), then answers what is
   * left, as `RateLimitStore.settle` does.
   */
  settle(keys: string[], policies: ModelPolicy[], deltas: number[], at: number, now: number) {
    keys.forEach((key, i) => settleHistory(this.history(key), policies[i], deltas[i], at, now));
    return this.left(keys, policies, now);
  }

  /**
   * What a refund or a settlement answers: each policy as a request of no cost would find it,
   * recording nothing; not allowed while one is over its limit.
   */
  left(keys: string[], policies: ModelPolicy[], now: number) {
    const verdicts = policies.map((p, i) =>
      ALGORITHMS[p.algorithm](this.history(keys[i]), now, p, 0),
    );
    const answers: ModelAnswer[] = verdicts.map((v) => ({
      allowed: v.allowed,
      retryAfterMs: v.allowed ? 0 : v.retryAfterMs,
      ...v.now(),
    }));
    return { allowed: verdicts.every((v) => v.allowed), answers };
  }

  /** The allowed requests of a key so far, and the charges settled on it, in the order recorded. */
  history(key: string): Event[] {
    let events = this.histories.get(key);
    if (events === undefined) this.histories.set(key, (events = []));
    return events;
  }
}

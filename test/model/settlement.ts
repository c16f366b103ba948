/**
 * Settlements in the reference model: what `RateLimitStore.settle` does to a key's history of
 * allowed requests, written from the definition. A positive delta is usage beyond the estimate,
 * spent already, so it is recorded whatever the limit says; a negative one is given back, as a
 * refund of the reservation's own request is. Both go where the reservation was counted, and
 * nowhere once that counts no more.
 */
import { indexOf } from '../support/calendar-windows.js';
import { type Event, type ModelPolicy } from './reference.js';

/** Changes `history` as settling the reservation that arrived at `at` by `delta` does, at `now`. */
export function settleHistory(
  history: Event[],
  p: ModelPolicy,
  delta: number,
  at: number,
  now: number,
): void {
  if (delta === 0) return;
  if (p.algorithm === 'token-bucket' || p.algorithm === 'leaky-bucket') {
    // A bucket has no windows: a charge is taken now, like a request; a give-back is a request
    // of negative cost, which the replay caps at what the bucket would hold had the reservation
    // been for what it used (see `tokenBucket` in `reference.ts`).
    history.push({ t: now, cost: delta, of: at });
    return;
  }
  const counted = where(history, p, at, now);
  if (counted === undefined) return;
  if (delta < 0) take(counted.events, -delta);
  else history.push({ t: counted.t, cost: delta });
}

/**
 * Where the reservation's units are counted: the events a give-back takes from, and the time a
 * charge is recorded at; undefined when that no longer counts.
 */
function where(history: Event[], p: ModelPolicy, at: number, now: number) {
  const P = p.periodUs;
  const live = history.filter((e) => e.cost > 0);
  if (p.algorithm === 'sliding-window') {
    // The reservation's own entry (requests of one microsecond are one entry); a charge joins
    // the newest entry, leaving the window with it.
    const inWindow = live.filter((e) => e.t > now - P);
    const own = inWindow.filter((e) => e.t === at);
    if (own.length === 0) return undefined;
    return { events: own, t: Math.max(...inWindow.map((e) => e.t)) };
  }
  // The windows: before [before, start), current [start, end), by the clock or the calendar.
  const k = p.starts === undefined ? 0 : indexOf(p.starts, now);
  const [before, start, end] =
    p.starts === undefined
      ? [now - (now % P) - P, now - (now % P), now - (now % P) + P]
      : p.starts.slice(k - 1, k + 2);
  const windowStart = at >= start ? start : at >= before ? before : undefined;
  // A fixed window counts only the current one; the sliding counter the previous one too.
  if (windowStart === undefined || (p.algorithm === 'fixed-window' && windowStart < start)) {
    return undefined;
  }
  const windowEnd = windowStart === start ? end : start;
  const events = live.filter((e) => e.t >= windowStart && e.t < windowEnd);
  return { events, t: windowStart === start ? now : at };
}

/** Takes up to `cost` units off `events`, newest first, as a refund takes them. */
function take(events: Event[], cost: number): void {
  for (let i = events.length - 1; i >= 0 && cost > 0; i--) {
    const taken = Math.min(events[i].cost, cost);
    events[i].cost -= taken;
    cost -= taken;
  }
}

/**
 * Calendar windows built by hand from explicit starts, so that the stores can be tested on
 * windows of any lengths (a day of 23 hours, a month of 31 days) apart from the calendar math.
 */
import { type RateAlgorithm } from '../../lib/algorithms/algorithm.js';
import { type CalendarWindow } from '../../lib/policy/calendar-window.js';
import { resolvePolicy, type ResolvedPolicy } from '../../lib/policy/rate-limit.policy.js';

export const HOUR_US = 3_600_000_000;
export const DAY_US = 24 * HOUR_US;

/** Window starts (µs) from `firstUs`, one window of each length in turn. */
export function startsFrom(firstUs: number, lengthsUs: readonly number[]): number[] {
  const starts = [firstUs];
  for (const length of lengthsUs) starts.push(starts[starts.length - 1] + length);
  return starts;
}

/**
 * Windows that start at `starts` (µs, ascending), as `CalendarWindow.bounds` gives them: the same
 * frozen array for every moment of one window. Throws for a moment without two windows on each side.
 */
export function windowsAt(starts: readonly number[]): CalendarWindow {
  const byWindow = new Map<number, readonly number[]>();
  return {
    unit: 'day',
    timeZone: 'UTC',
    anchorMs: undefined,
    bounds(nowUs) {
      const i = indexOf(starts, nowUs);
      if (i < 2 || i + 3 >= starts.length) {
        throw new RangeError(`${nowUs} µs has no two windows on each side in this test calendar`);
      }
      let bounds = byWindow.get(i);
      if (bounds === undefined)
        byWindow.set(i, (bounds = Object.freeze(starts.slice(i - 2, i + 4))));
      return bounds;
    },
  };
}

/** The index of the window that holds `t`: the last start at or before it; -1 before the first. */
export function indexOf(starts: readonly number[], t: number): number {
  let lo = -1;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi + 1) / 2);
    if (starts[mid] <= t) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * The same windows as a caller whose clock is `skewUs` ahead of the store's sees them: the bounds
 * around its estimate, which the store must place its own now in.
 */
export function skewed(calendar: CalendarWindow, skewUs: number): CalendarWindow {
  return { ...calendar, bounds: (nowUs) => calendar.bounds(nowUs + skewUs) };
}

/**
 * A policy of `algorithm` whose windows are `calendar`'s; `periodUs` is the longest window, as a
 * calendar policy's is.
 */
export function calendarPolicy(
  algorithm: RateAlgorithm,
  threshold: number,
  calendar: CalendarWindow,
  longestUs: number,
  name = `${threshold}-per-window`,
): ResolvedPolicy {
  const base = resolvePolicy(
    { algorithm, threshold, period: `${Math.ceil(longestUs / 1000)}ms`, name },
    'calendar test',
  );
  return Object.freeze({ ...base, calendar });
}

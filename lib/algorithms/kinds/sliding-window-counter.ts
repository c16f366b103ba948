import { type AlgorithmTwin, ms, NEVER, type Params, us } from '../algorithm.js';
import { type Window, windowOf } from '../windows.js';

/**
 * The hash `{ w, c, p, t }`: the start (µs) of the window written in, its count, the count of the
 * window before; for a calendar policy, when it was last written (µs).
 */
export interface TwoWindows {
  w: number;
  c: number;
  p: number;
  t?: number;
}

interface Work {
  current: number;
  previous: number;
}

function read(state: TwoWindows | undefined, now: number, p: Params) {
  const window = windowOf(now, p);
  if (p.bounds !== undefined && state?.t !== undefined) {
    // The rule of `sliding-window-counter.lua`: each count in the latest window of now that began
    // at or before the last moment its units can have been spent, if any.
    const placed = { window, current: 0, previous: 0 };
    for (const [units, last] of [
      [state.c, state.t],
      [state.p, state.w - 1],
    ]) {
      if (last >= window.start) placed.current += units;
      else if (last >= window.previous) placed.previous += units;
    }
    return placed;
  }
  if (state?.w === window.start) return { window, current: state.c, previous: state.p };
  if (state?.w === window.previous) return { window, current: 0, previous: state.c };
  return { window, current: 0, previous: 0 };
}

const weightedPrevious = ({ at, start, end }: Window, previous: number) =>
  (previous * (end - at)) / (end - start);

/** The hash as `swc_write` leaves it, kept until the end of the next window (see the Lua for the calendar). */
function stored(now: number, p: Params, current: number, previous: number) {
  const { at, start, next } = windowOf(now, p);
  const state: TwoWindows =
    p.bounds === undefined
      ? { w: start, c: current, p: previous }
      : { w: start, c: current, p: previous, t: at };
  const livesMs = p.bounds === undefined ? ms(next - at) : ms(2 * p.periodUs);
  return { state, expiresAtUs: now + livesMs * 1000 };
}

/** Twin of `sliding-window-counter.lua`: the same float expressions in the same order. */
export const slidingWindowCounter: AlgorithmTwin<TwoWindows, Work> = {
  check(state, now, p) {
    const { window, current, previous } = read(state, now, p);
    const work = { current, previous };
    if (p.cost > p.limit) return { allowed: false, retryAfterUs: NEVER, work };
    const weighted = weightedPrevious(window, previous);
    if (weighted + current + p.cost <= p.limit) return { allowed: true, retryAfterUs: 0, work };
    const { at, start, end, next } = window;
    const retryAt =
      current + p.cost <= p.limit
        ? end - ((p.limit - current - p.cost) * (end - start)) / previous
        : end + Math.max(0, next - end - ((p.limit - p.cost) * (next - end)) / current);
    return { allowed: false, retryAfterUs: Math.max(1, us(retryAt - at)), work };
  },

  after(now, p, { current, previous }) {
    const window = windowOf(now, p);
    const weighted = weightedPrevious(window, previous);
    return {
      remaining: Math.floor(p.limit - weighted - current - p.cost),
      resetAfterMs: ms(window.next - window.at),
    };
  },

  commit(_state, now, p, work) {
    return {
      ...stored(now, p, work.current + p.cost, work.previous),
      ...slidingWindowCounter.after(now, p, work),
    };
  },

  refund(state, now, p, at) {
    const { window, current, previous } = read(state, now, p);
    if (at !== undefined && at < window.previous) return null;
    const earlier = at !== undefined && at < window.start;
    const [c, pr] = earlier
      ? [current, Math.max(previous - p.cost, 0)]
      : [Math.max(current - p.cost, 0), previous];
    if (c === 0 && pr === 0) return undefined;
    return stored(now, p, c, pr);
  },

  charge(state, now, p, at) {
    const { window, current, previous } = read(state, now, p);
    if (at !== undefined && at < window.previous) return null;
    const earlier = at !== undefined && at < window.start;
    return earlier
      ? stored(now, p, current, previous + p.cost)
      : stored(now, p, current + p.cost, previous);
  },

  status(_state, now, p, { current, previous }) {
    const window = windowOf(now, p);
    const weighted = weightedPrevious(window, previous);
    let resetAfterMs = 0;
    if (current > 0) resetAfterMs = ms(window.next - window.at);
    else if (previous > 0) resetAfterMs = ms(window.end - window.at);
    return { remaining: Math.max(0, Math.floor(p.limit - weighted - current)), resetAfterMs };
  },
};

import { type AlgorithmTwin, ms, NEVER, type Params, us } from './algorithm.js';

/** The hash `{ w, c, p }`: the current window's start (µs), its count, the previous count. */
export interface TwoWindows {
  w: number;
  c: number;
  p: number;
}

interface Work {
  current: number;
  previous: number;
}

function read(state: TwoWindows | undefined, now: number, p: Params) {
  const start = now - (now % p.periodUs);
  if (state?.w === start) return { start, current: state.c, previous: state.p };
  if (state?.w === start - p.periodUs) return { start, current: 0, previous: state.c };
  return { start, current: 0, previous: 0 };
}

const weightedPrevious = (now: number, p: Params, start: number, previous: number) =>
  (previous * (p.periodUs - (now - start))) / p.periodUs;

/** The hash as `swc_write` leaves it, kept until the end of the next window. */
function stored(now: number, p: Params, current: number, previous: number) {
  const start = now - (now % p.periodUs);
  const state: TwoWindows = { w: start, c: current, p: previous };
  return { state, expiresAtUs: now + ms(start + 2 * p.periodUs - now) * 1000 };
}

/** Twin of `sliding-window-counter.lua`: the same float expressions in the same order. */
export const slidingWindowCounter: AlgorithmTwin<TwoWindows, Work> = {
  check(state, now, p) {
    const { start, current, previous } = read(state, now, p);
    const work = { current, previous };
    if (p.cost > p.limit) return { allowed: false, retryAfterUs: NEVER, work };
    const weighted = weightedPrevious(now, p, start, previous);
    if (weighted + current + p.cost <= p.limit) return { allowed: true, retryAfterUs: 0, work };
    const retryAt =
      current + p.cost <= p.limit
        ? start + p.periodUs - ((p.limit - current - p.cost) * p.periodUs) / previous
        : start +
          p.periodUs +
          Math.max(0, p.periodUs - ((p.limit - p.cost) * p.periodUs) / current);
    return { allowed: false, retryAfterUs: Math.max(1, us(retryAt - now)), work };
  },

  after(now, p, { current, previous }) {
    const start = now - (now % p.periodUs);
    const weighted = weightedPrevious(now, p, start, previous);
    return {
      remaining: Math.floor(p.limit - weighted - current - p.cost),
      resetAfterMs: ms(start + 2 * p.periodUs - now),
    };
  },

  commit(_state, now, p, work) {
    return {
      ...stored(now, p, work.current + p.cost, work.previous),
      ...slidingWindowCounter.after(now, p, work),
    };
  },

  refund(state, now, p, at) {
    const { start, current, previous } = read(state, now, p);
    if (at !== undefined && at < start - p.periodUs) return null;
    const earlier = at !== undefined && at < start;
    const [c, pr] = earlier
      ? [current, Math.max(previous - p.cost, 0)]
      : [Math.max(current - p.cost, 0), previous];
    if (c === 0 && pr === 0) return undefined;
    return stored(now, p, c, pr);
  },

  charge(state, now, p, at) {
    const { start, current, previous } = read(state, now, p);
    if (at !== undefined && at < start - p.periodUs) return null;
    const earlier = at !== undefined && at < start;
    return earlier
      ? stored(now, p, current, previous + p.cost)
      : stored(now, p, current + p.cost, previous);
  },

  status(_state, now, p, { current, previous }) {
    const start = now - (now % p.periodUs);
    const weighted = weightedPrevious(now, p, start, previous);
    let resetAfterMs = 0;
    if (current > 0) resetAfterMs = ms(start + 2 * p.periodUs - now);
    else if (previous > 0) resetAfterMs = ms(start + p.periodUs - now);
    return { remaining: Math.max(0, Math.floor(p.limit - weighted - current)), resetAfterMs };
  },
};

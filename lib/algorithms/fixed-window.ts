import { type AlgorithmTwin, ms, NEVER } from './algorithm.js';
import { windowOf } from './windows.js';

/** The current window's start (µs) and count; Redis packs the window number and count in one integer. */
export interface WindowCount {
  start: number;
  count: number;
}

/** Counts stay below 2^30, as in Redis, where the window number is packed above them. */
const MAX_COUNT = 2 ** 30 - 1;

interface Work {
  count: number;
  start: number;
  /** µs from now (as `windowOf` counts it) to the window's end. */
  left: number;
}

/** Twin of `fixed-window.lua`. `%` on non-negative doubles is exact, like Lua's math.fmod. */
export const fixedWindow: AlgorithmTwin<WindowCount, Work> = {
  check(state, now, p) {
    const { at, start, end } = windowOf(now, p);
    const count = state !== undefined && state.start === start ? state.count : 0;
    const work = { count, start, left: end - at };
    if (p.cost > p.limit) return { allowed: false, retryAfterUs: NEVER, work };
    if (count + p.cost <= p.limit) return { allowed: true, retryAfterUs: 0, work };
    return { allowed: false, retryAfterUs: work.left, work };
  },

  after(_now, p, { count, left }) {
    return { remaining: p.limit - count - p.cost, resetAfterMs: ms(left) };
  },

  commit(_state, now, p, work) {
    const outcome = fixedWindow.after(now, p, work);
    return {
      state: { start: work.start, count: work.count + p.cost },
      expiresAtUs: now + outcome.resetAfterMs * 1000,
      ...outcome,
    };
  },

  refund(state, now, p, at) {
    const { work } = fixedWindow.check(state, now, { ...p, cost: 0 });
    // The request arrived in an earlier window, whose count no longer matters.
    if (at !== undefined && at < work.start) return null;
    const left = Math.max(work.count - p.cost, 0);
    if (left === 0) return undefined;
    const resetAfterMs = ms(work.left);
    return { state: { start: work.start, count: left }, expiresAtUs: now + resetAfterMs * 1000 };
  },

  charge(state, now, p, at) {
    const { work } = fixedWindow.check(state, now, { ...p, cost: 0 });
    // The reservation was counted in an earlier window, whose count no longer matters.
    if (at !== undefined && at < work.start) return null;
    const resetAfterMs = ms(work.left);
    const count = Math.min(work.count + p.cost, MAX_COUNT);
    return { state: { start: work.start, count }, expiresAtUs: now + resetAfterMs * 1000 };
  },

  status(_state, _now, p, { count, left }) {
    if (count === 0) return { remaining: p.limit, resetAfterMs: 0 };
    return { remaining: Math.max(p.limit - count, 0), resetAfterMs: ms(left) };
  },
};

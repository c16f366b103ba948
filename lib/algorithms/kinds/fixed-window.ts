import { type AlgorithmTwin, ms, NEVER, type Params } from '../algorithm.js';
import { windowOf } from '../windows.js';

/**
 * The count, and the start (µs) of the window it was written in; for a calendar policy, also its
 * mark, the second it was last written at (see `fixed-window.lua`). Redis packs the window number
 * or the mark with the count in one integer.
 */
export interface WindowCount {
  start: number;
  mark: number;
  count: number;
}

/** Counts stay below 2^30, as in Redis, where the window number is packed above them. */
const MAX_COUNT = 2 ** 30 - 1;

interface Work {
  count: number;
  start: number;
  /** The mark a write now stores. */
  mark: number;
  /** µs from now (as `windowOf` counts it) to the window's end. */
  left: number;
}

/** Like `fw_mark`: for the calendar, the second written at, no earlier than the window's first. */
const markOf = (at: number, start: number) =>
  Math.max(Math.floor(at / 1_000_000), Math.ceil(start / 1_000_000));

/**
 * Like `fw_counts`: the count of the window it was written in; for the calendar, a count written at
 * or after the current window's start (the rule in `fixed-window.lua`, which has it once).
 */
function counts(state: WindowCount, start: number, p: Params): boolean {
  return p.bounds === undefined ? state.start === start : state.mark * 1_000_000 >= start;
}

/** Like `fw_lives`: to the window's end; a calendar count, the longest window and a second. */
const livesMs = (p: Params, leftMs: number) =>
  p.bounds === undefined ? leftMs : ms(p.periodUs) + 1000;

/** Twin of `fixed-window.lua`. `%` on non-negative doubles is exact, like Lua's math.fmod. */
export const fixedWindow: AlgorithmTwin<WindowCount, Work> = {
  check(state, now, p) {
    const { at, start, end } = windowOf(now, p);
    const count = state !== undefined && counts(state, start, p) ? state.count : 0;
    const work = { count, start, mark: markOf(at, start), left: end - at };
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
      state: { start: work.start, mark: work.mark, count: work.count + p.cost },
      expiresAtUs: now + livesMs(p, outcome.resetAfterMs) * 1000,
      ...outcome,
    };
  },

  refund(state, now, p, at) {
    const { work } = fixedWindow.check(state, now, { ...p, cost: 0 });
    // The request arrived in an earlier window, whose count no longer matters.
    if (at !== undefined && at < work.start) return null;
    const left = Math.max(work.count - p.cost, 0);
    if (left === 0) return undefined;
    return {
      state: { start: work.start, mark: work.mark, count: left },
      expiresAtUs: now + livesMs(p, ms(work.left)) * 1000,
    };
  },

  charge(state, now, p, at) {
    const { work } = fixedWindow.check(state, now, { ...p, cost: 0 });
    // The reservation was counted in an earlier window, whose count no longer matters.
    if (at !== undefined && at < work.start) return null;
    const count = Math.min(work.count + p.cost, MAX_COUNT);
    return {
      state: { start: work.start, mark: work.mark, count },
      expiresAtUs: now + livesMs(p, ms(work.left)) * 1000,
    };
  },

  status(_state, _now, p, { count, left }) {
    if (count === 0) return { remaining: p.limit, resetAfterMs: 0 };
    return { remaining: Math.max(p.limit - count, 0), resetAfterMs: ms(left) };
  },
};

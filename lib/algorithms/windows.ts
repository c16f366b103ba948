import { type Params } from './algorithm.js';

/** The window that holds a moment, for the window algorithms (times in µs). */
export interface Window {
  /** The moment to count at: now, or for a now outside a calendar policy's bounds the nearest they cover. */
  readonly at: number;
  readonly start: number;
  /** The window's end: the next one's start. */
  readonly end: number;
  /** The previous window's start. */
  readonly previous: number;
  /** The next window's end. */
  readonly next: number;
}

/**
 * Twin of `window_of` in `prelude.lua`: windows of `periodUs` aligned to the epoch, or a calendar
 * policy's (`p.bounds`), the one of `[b1, b2)`, `[b2, b3)`, `[b3, b4)` that holds `now`. A now
 * outside all three counts as the nearest moment they cover. See the Lua for why.
 */
export function windowOf(now: number, p: Params): Window {
  const b = p.bounds;
  if (b === undefined) {
    const start = now - (now % p.periodUs);
    return {
      at: now,
      start,
      end: start + p.periodUs,
      previous: start - p.periodUs,
      next: start + 2 * p.periodUs,
    };
  }
  const at = now < b[1] ? b[1] : now >= b[4] ? b[4] - 1 : now;
  const i = at < b[2] ? 1 : at < b[3] ? 2 : 3;
  return { at, start: b[i], end: b[i + 1], previous: b[i - 1], next: b[i + 2] };
}

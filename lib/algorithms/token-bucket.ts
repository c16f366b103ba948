import { type AlgorithmTwin, ms, type Params } from './algorithm.js';

/** The hash `{ t, at }`: tokens left, and when they were counted (µs). */
export interface Bucket {
  t: number;
  at: number;
}

const refillMs = (tokens: number, p: Params) => ms(((p.burst - tokens) * p.periodUs) / p.limit);

/** Twin of `token-bucket.lua`: the same float expressions in the same order. */
export const tokenBucket: AlgorithmTwin<Bucket, number> = {
  check(state, now, p) {
    let tokens = p.burst;
    if (state !== undefined && now < state.at + refillMs(state.t, p) * 1000) {
      tokens = Math.min(p.burst, state.t + (Math.max(now - state.at, 0) * p.limit) / p.periodUs);
    }
    if (p.cost > p.burst) return { allowed: false, retryAfterMs: -1, work: tokens };
    if (tokens >= p.cost) return { allowed: true, retryAfterMs: 0, work: tokens };
    return {
      allowed: false,
      retryAfterMs: ms(((p.cost - tokens) * p.periodUs) / p.limit),
      work: tokens,
    };
  },

  commit(_state, now, p, tokens) {
    const left = tokens - p.cost;
    const resetAfterMs = refillMs(left, p);
    return {
      state: { t: left, at: now },
      expiresAtUs: now + resetAfterMs * 1000,
      remaining: Math.floor(left),
      resetAfterMs,
    };
  },

  status(_state, _now, p, tokens) {
    return { remaining: Math.floor(tokens), resetAfterMs: refillMs(tokens, p) };
  },
};

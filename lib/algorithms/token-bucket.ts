import { type AlgorithmTwin, MAX_DEBT_US, ms, NEVER, type Params, us } from './algorithm.js';

/** The hash `{ t, at }`: tokens left, and when they were counted (µs). */
export interface Bucket {
  t: number;
  at: number;
}

const refillMs = (tokens: number, p: Params) => ms(((p.burst - tokens) * p.periodUs) / p.limit);

/**
 * Tokens in the bucket now, like `open` in `token-bucket.lua`: what was left plus the refill
 * since, up to full.
 */
function tokensAt(state: Bucket | undefined, now: number, p: Params): number {
  if (state === undefined || now >= state.at + refillMs(state.t, p) * 1000) return p.burst;
  return Math.min(p.burst, state.t + (Math.max(now - state.at, 0) * p.limit) / p.periodUs);
}

/** Twin of `token-bucket.lua`: the same float expressions in the same order. */
export const tokenBucket: AlgorithmTwin<Bucket, number> = {
  check(state, now, p, aheadUs) {
    const tokens = tokensAt(state, now, p);
    if (p.cost > p.burst) return { allowed: false, retryAfterUs: NEVER, work: tokens };
    if (tokens >= p.cost) return { allowed: true, retryAfterUs: 0, work: tokens };
    const wait = ((p.cost - tokens) * p.periodUs) / p.limit;
    const allowed = aheadUs !== undefined && wait <= aheadUs;
    return { allowed, retryAfterUs: us(wait), work: tokens };
  },

  after(_now, p, tokens) {
    const left = tokens - p.cost;
    return { remaining: Math.max(0, Math.floor(left)), resetAfterMs: refillMs(left, p) };
  },

  commit(_state, now, p, tokens) {
    const left = tokens - p.cost;
    return {
      state: { t: left, at: now },
      expiresAtUs: now + refillMs(left, p) * 1000,
      ...tokenBucket.after(now, p, tokens),
    };
  },

  refund(state, now, p) {
    const tokens = Math.min(p.burst, tokensAt(state, now, p) + p.cost);
    if (tokens >= p.burst) return undefined;
    return { state: { t: tokens, at: now }, expiresAtUs: now + refillMs(tokens, p) * 1000 };
  },

  charge(state, now, p) {
    const left = Math.max(tokensAt(state, now, p) - p.cost, (-MAX_DEBT_US * p.limit) / p.periodUs);
    return { state: { t: left, at: now }, expiresAtUs: now + refillMs(left, p) * 1000 };
  },

  status(_state, _now, p, tokens) {
    // A bucket in debt has nothing remaining, not less.
    return { remaining: Math.max(0, Math.floor(tokens)), resetAfterMs: refillMs(tokens, p) };
  },
};

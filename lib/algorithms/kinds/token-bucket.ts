import { type AlgorithmTwin, MAX_DEBT_US, ms, NEVER, type Params, us } from '../algorithm.js';

/**
 * The state of `token-bucket.lua`, whose hash holds the same (its times in the record as
 * offsets): tokens left, when they were counted (µs), when the bucket was last full (µs), the most
 * it has held since then, and when it was last given something back (`s - 1` if not since). `s`,
 * `h` and `g` bound a late give-back.
 */
export interface Bucket {
  t: number;
  at: number;
  s: number;
  h: number;
  g: number;
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

/**
 * `tokens` left now, after `before`, as `tb_write` records them: the record starts afresh when
 * the bucket was full.
 */
function written(
  state: Bucket | undefined,
  now: number,
  p: Params,
  before: number,
  tokens: number,
): { state: Bucket; expiresAtUs: number } {
  const fresh = state === undefined || before >= p.burst;
  const s = fresh ? now : state.s;
  const h = fresh ? tokens : Math.max(state.h, before, tokens);
  const g = tokens > before ? now : fresh ? now - 1 : state.g;
  return { state: { t: tokens, at: now, s, h, g }, expiresAtUs: now + refillMs(tokens, p) * 1000 };
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

  commit(state, now, p, tokens) {
    return {
      ...written(state, now, p, tokens, tokens - p.cost),
      ...tokenBucket.after(now, p, tokens),
    };
  },

  // Gives back no more than the bucket would hold had the request never been made: see `refund`
  // in `token-bucket.lua`.
  refund(state, now, p, atUs) {
    const tokens = tokensAt(state, now, p);
    let high = tokens;
    if (tokens < p.burst && atUs !== undefined && (atUs < state!.at || atUs <= state!.g)) {
      if (atUs < state!.s) return null;
      high = Math.max(state!.h, tokens);
    }
    const left = Math.min(p.burst - (high - tokens), tokens + p.cost);
    if (left >= p.burst) return undefined;
    return written(state, now, p, tokens, left);
  },

  charge(state, now, p) {
    const tokens = tokensAt(state, now, p);
    const left = Math.max(tokens - p.cost, (-MAX_DEBT_US * p.limit) / p.periodUs);
    return written(state, now, p, tokens, left);
  },

  status(_state, _now, p, tokens) {
    // A bucket in debt has nothing remaining, not less.
    return { remaining: Math.max(0, Math.floor(tokens)), resetAfterMs: refillMs(tokens, p) };
  },
};

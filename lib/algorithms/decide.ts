import { type Algorithm, ms, type Params } from './algorithm.js';
import { TWINS } from './index.js';

/** What a call does, as `decide.lua` spells it: consume, peek, refund, reset (x), block. */
export type Operation = 'c' | 'p' | 'r' | 'x' | 'b';

/** One policy of a call, as the script's arguments carry it. */
export interface PolicyArgs extends Params {
  readonly algorithm: Algorithm;
  /** Lock-out after a rejection (or, for a block, its length), in µs; 0 for none. */
  readonly blockUs: number;
}

/** Where the memory store keeps each key's state; the twin of the Redis keyspace. */
export interface KeyValues {
  /** The state, or undefined once it has expired or was never written. */
  get(key: string): unknown;
  set(key: string, state: unknown, expiresAtUs: number): void;
  delete(key: string): void;
}

/** The twin of a lock-out: it replaces the key's state, as `-until` does in Redis. */
export class LockOut {
  constructor(readonly untilUs: number) {}
}

/**
 * The twin of `decide.lua`, step for step: the same operations, the same order, the same reply
 * (`{ allowed, then allowed, remaining, retry_after_ms, reset_after_ms per policy }`, without the
 * trailing time). `at` is a refund's arrival time, `r<µs>` in Lua.
 */
export function decide(
  op: Operation,
  keys: readonly string[],
  policies: readonly PolicyArgs[],
  now: number,
  values: KeyValues,
  at?: number,
): number[] {
  const n = keys.length;
  for (let i = 0; i < n; i++) {
    if (op === 'x') values.delete(keys[i]);
    else if (op === 'r' && policies[i].cost > 0) refund(keys[i], now, policies[i], values, at);
    else if (op === 'b') lockOut(keys[i], now, policies[i], values);
  }
  // What is left after a refund or reset is what a request of no cost would see.
  const params = op === 'x' || op === 'r' ? policies.map((p) => ({ ...p, cost: 0 })) : policies;

  const states: unknown[] = new Array(n);
  const checks = new Array<{
    allowed: boolean;
    retryAfterMs: number;
    work: unknown;
    lock?: number;
  }>(n);
  let allowed = 1;
  for (let i = 0; i < n; i++) {
    const state = values.get(keys[i]);
    if (state instanceof LockOut && state.untilUs > now) {
      const retryAfterMs = ms(state.untilUs - now);
      checks[i] = { allowed: false, retryAfterMs, work: undefined, lock: state.untilUs };
    } else {
      // A lock-out that has just ended counts as no state at all.
      states[i] = state instanceof LockOut ? undefined : state;
      checks[i] = TWINS[params[i].algorithm].check(states[i], now, params[i]);
    }
    if (!checks[i].allowed) allowed = 0;
  }

  const reply = [allowed];
  for (let i = 0; i < n; i++) {
    const p = params[i];
    const twin = TWINS[p.algorithm];
    const c = checks[i];
    let outcome: { remaining: number; resetAfterMs: number };
    let retry = c.retryAfterMs;
    if (!c.allowed) {
      if (c.lock !== undefined) {
        outcome = { remaining: 0, resetAfterMs: retry };
      } else if (p.blockUs > 0 && retry >= 0) {
        if (op === 'c') lockOut(keys[i], now, p, values);
        retry = ms(p.blockUs);
        outcome = { remaining: 0, resetAfterMs: retry };
      } else {
        outcome = twin.status(states[i], now, p, c.work);
      }
    } else if (allowed === 0 || op === 'r' || op === 'x') {
      outcome = twin.status(states[i], now, p, c.work);
    } else if (op === 'c') {
      const done = twin.commit(states[i], now, p, c.work);
      values.set(keys[i], done.state, done.expiresAtUs);
      outcome = done;
    } else {
      outcome = twin.after(now, p, c.work);
    }
    reply.push(c.allowed ? 1 : 0, outcome.remaining, retry, outcome.resetAfterMs);
  }
  return reply;
}

function lockOut(key: string, now: number, p: PolicyArgs, values: KeyValues): void {
  values.set(key, new LockOut(now + p.blockUs), now + ms(p.blockUs) * 1000);
}

function refund(key: string, now: number, p: PolicyArgs, values: KeyValues, at?: number): void {
  const state = values.get(key);
  if (state instanceof LockOut && state.untilUs > now) return;
  const live = state instanceof LockOut ? undefined : state;
  const left = TWINS[p.algorithm].refund(live, now, p, at);
  if (left === undefined) values.delete(key);
  else if (left !== null) values.set(key, left.state, left.expiresAtUs);
}

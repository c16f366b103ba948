import {
  type AlgorithmTwin,
  type KeyValues,
  ms,
  NEVER,
  ON_OUTCOME,
  type PolicyArgs,
  type Stored,
} from './algorithm.js';
import { leaseId } from './kinds/concurrency.js';
import { enter, inFlight } from './ledger.js';
import { algorithmOf } from './registry.js';

/**
 * What a call does, as `decide.lua` spells it: consume, peek, refund, reset (x), block, reserve
 * (w), release a lease (l), renew it (n), settle a reservation (s).
 */
export type Operation = 'c' | 'p' | 'r' | 'x' | 'b' | 'w' | 'l' | 'n' | 's';

/**
 * A policy's ledger of requests counted whose outcome is not known yet, on a route that counts
 * only some outcomes: where it lives, and the units of the request this call counts there or takes
 * out of it (see `pending` in `decide.lua`).
 */
export interface Ledger {
  readonly key: string;
  readonly units: number;
}

/** The twin of a lock-out: it replaces the key's state, as `-until` does in Redis. */
export class LockOut {
  constructor(readonly untilUs: number) {}
}

/**
 * The twin of `decide.lua`: the same operations, applied in the same order (first what the
 * operation does to each key, then every policy checked, then each committed, or answered), with
 * lock-outs handled here alone in both, and the same reply (`{ allowed, then allowed, remaining,
 * retry_after_us, reset_after_ms per policy, then now (µs), then the lease id if one was taken }`).
 * `at` is what follows the operation's letter in Lua: a refund's or a settlement's arrival time, a
 * reservation's longest wait (µs), a lease id. A settlement's costs are signed: charged (> 0) or
 * given back as a refund would (< 0). `ledgers`, per policy, as the keys after the policies' own
 * in Lua: counted by a consume or reserve, taken out by a refund.
 */
export function decide(
  op: Operation,
  keys: readonly string[],
  policies: readonly PolicyArgs[],
  now: number,
  values: KeyValues,
  at?: number,
  ledgers?: readonly (Ledger | undefined)[],
): number[] {
  const n = keys.length;
  // Each policy's twin, as each Lua policy carries its algorithm.
  const twins = new Array<AlgorithmTwin<unknown, unknown>>(n);
  let lost = false;
  for (let i = 0; i < n; i++) {
    const p = policies[i];
    const twin = (twins[i] = algorithmOf(p.algorithm).twin);
    if (op === 'x') values.delete(keys[i]);
    else if (op === 'b') lockOut(keys[i], now, p, values);
    else if (
      (op === 'r' && p.cost > 0) ||
      (op === 's' && p.cost !== 0 && twin.charge !== undefined) ||
      (op === 'l' && twin.release !== undefined) ||
      (op === 'n' && twin.renew !== undefined)
    ) {
      // A locked-out key holds nothing to give back, to charge, to free or to renew. Leases are
      // never reserved, so they have nothing to settle (they have no charge).
      const state = open(keys[i], now, values);
      if (state instanceof LockOut) lost ||= op === 'n';
      else if (op === 'r') store(keys[i], values, twin.refund(state, now, p, at));
      else if (op === 's' && p.cost > 0) store(keys[i], values, twin.charge!(state, now, p, at));
      else if (op === 's')
        store(keys[i], values, twin.refund(state, now, { ...p, cost: -p.cost }, at));
      else if (op === 'l') store(keys[i], values, twin.release!(state, now, p, at!));
      else {
        const renewed = twin.renew!(state, now, p, at!);
        if (renewed === null) lost = true;
        else values.set(keys[i], renewed.state, renewed.expiresAtUs);
      }
    }
    const ledger = ledgers?.[i];
    if (op === 'r' && ledger !== undefined && at !== undefined) {
      enter(ledger.key, at, -ledger.units, p, values);
    }
  }
  // What is left afterwards is what a request of no cost would see.
  const params =
    op === 'x' || op === 'r' || op === 'l' || op === 'n' || op === 's'
      ? policies.map((p) => ({ ...p, cost: 0 }))
      : policies;
  const ahead = op === 'w' ? at : undefined;

  const states: unknown[] = new Array(n);
  const checks = new Array<{
    allowed: boolean;
    retryAfterUs: number;
    work: unknown;
    lock?: number;
    pending?: boolean;
  }>(n);
  let allowed = 1;
  for (let i = 0; i < n; i++) {
    const state = open(keys[i], now, values);
    if (state instanceof LockOut) {
      const retryAfterUs = state.untilUs - now;
      checks[i] = { allowed: false, retryAfterUs, work: undefined, lock: state.untilUs };
    } else {
      states[i] = state;
      checks[i] = twins[i].check(state, now, params[i], ahead);
      const ledger = ledgers?.[i];
      const { allowed: fits, retryAfterUs } = checks[i];
      if (!fits && retryAfterUs !== NEVER && ledger !== undefined && (op === 'c' || op === 'w')) {
        checks[i].pending = pending(twins[i], state, ledger.key, now, params[i], values, ahead);
      }
    }
    if (!checks[i].allowed) allowed = 0;
  }
  const takes = allowed === 1 && (op === 'c' || op === 'w');
  // From the concurrency algorithm's file, as `lease_id` is in Lua; undefined without leases.
  const lease = takes ? leaseId(twins, params, states, now) : undefined;

  const reply = [allowed];
  for (let i = 0; i < n; i++) {
    const p = params[i];
    const twin = twins[i];
    const c = checks[i];
    let outcome: { remaining: number; resetAfterMs: number };
    let retry = c.retryAfterUs;
    if (c.pending === true) {
      outcome = twin.status(states[i], now, p, c.work);
      retry = ON_OUTCOME;
    } else if (!c.allowed) {
      if (c.lock !== undefined) {
        outcome = { remaining: 0, resetAfterMs: ms(retry) };
      } else if (p.blockUs > 0 && retry !== NEVER) {
        if (op === 'c' || op === 'w') lockOut(keys[i], now, p, values);
        retry = p.blockUs;
        outcome = { remaining: 0, resetAfterMs: ms(retry) };
      } else {
        outcome = twin.status(states[i], now, p, c.work);
      }
    } else if (takes) {
      const done = twin.commit(states[i], now, p, c.work, lease);
      values.set(keys[i], done.state, done.expiresAtUs);
      outcome = done;
      const ledger = ledgers?.[i];
      if (ledger !== undefined) enter(ledger.key, now, ledger.units, p, values);
    } else if (op !== 'p' || allowed === 0) {
      outcome = twin.status(states[i], now, p, c.work);
    } else {
      outcome = twin.after(now, p, c.work);
    }
    reply.push(c.allowed ? 1 : 0, outcome.remaining, retry, outcome.resetAfterMs);
  }
  if (lost) reply[0] = 0;
  reply.push(now);
  if (lease !== undefined) reply.push(lease);
  return reply;
}

/**
 * Like `open` in `decide.lua`: the lock-out in force on the key, or else its state. A lock-out
 * that has ended counts as no state at all (Lua deletes it, since it is of another type than the
 * state; here the next write replaces it).
 */
function open(key: string, now: number, values: KeyValues): unknown {
  const state = values.get(key);
  if (!(state instanceof LockOut)) return state;
  return state.untilUs > now ? state : undefined;
}

function store(key: string, values: KeyValues, left: Stored<unknown> | undefined | null): void {
  if (left === undefined) values.delete(key);
  else if (left !== null) values.set(key, left.state, left.expiresAtUs);
}

function lockOut(key: string, now: number, p: PolicyArgs, values: KeyValues): void {
  values.set(key, new LockOut(now + p.blockUs), now + ms(p.blockUs) * 1000);
}

/** Like `pending` in `decide.lua`: whether the request would fit without the units in flight. */
function pending(
  twin: AlgorithmTwin<unknown, unknown>,
  state: unknown,
  key: string,
  now: number,
  p: PolicyArgs,
  values: KeyValues,
  ahead: number | undefined,
): boolean {
  const units = inFlight(key, now, p, values);
  if (units === 0) return false;
  return twin.check(state, now, { ...p, cost: Math.max(p.cost - units, 0) }, ahead).allowed;
}

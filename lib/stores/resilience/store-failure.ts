import { RateLimitConfigError } from '../../policy/validation.js';
import { isError } from '../errors.js';

/**
 * A store call failed in this process, before it was sent or once its reply had come: its
 * arguments could not be built, or its reply could not be read. The call's own trouble, never the
 * store's. `cause` is what was thrown.
 */
export class StoreCallError extends Error {
  override readonly name = 'StoreCallError';
  constructor(doing: string, cause: unknown) {
    const reason = isError(cause) ? `${cause.name}: ${cause.message}` : String(cause);
    super(`the rate-limit store could not ${doing} (${reason})`, { cause });
  }
}

/**
 * `error`, thrown while this process prepared a store call or read its reply, as the call's own:
 * an invalid value as it is (its message names the field), anything else as a
 * {@link StoreCallError} that says what was being done.
 */
export function callsOwnError(error: unknown, doing: string): Error {
  return error instanceof RateLimitConfigError || error instanceof StoreCallError
    ? error
    : new StoreCallError(doing, error);
}

// Replies in which the server answered this one call, and said why it could not decide it:
// a key that holds another type (written by something else), keys in several slots, or an error
// of the decision's own Lua. ioredis, node-redis and Valkey GLIDE (through `serverError`) all
// start the message with the server's code; GLIDE drops the `ERR ` of a Lua error, and a
// decision of a batch carries its Lua error as Lua wrote it, without one too.
const CALLS_OWN_REPLY = /^(?:WRONGTYPE |CROSSSLOT |(?:ERR )?user_(?:function|script):\d+: )/;

// Errors a store has said are its decision's trouble alone, its server being alive.
const DECISION_ONLY = new WeakSet<object>();

/**
 * Marks `error` as the trouble of the one decision that met it, its server being alive (a Redis
 * Cluster slot half-way through a migration, say): the decision is still answered as
 * `onStoreError` says, but its server counts as healthy, and no breaker opens. Returns `error`.
 */
export function failsThisDecisionOnly<E>(error: E): E {
  if (typeof error === 'object' && error !== null) DECISION_ONLY.add(error);
  return error;
}

/** Whether a store marked `error` with {@link failsThisDecisionOnly}. */
export function isThisDecisionOnly(error: unknown): boolean {
  return typeof error === 'object' && error !== null && DECISION_ONLY.has(error);
}

// What a store may yet learn of a failed call: whether it applied it after all.
const LATE_OUTCOMES = new WeakMap<object, Promise<unknown>>();

/**
 * Marks `error`, a failure after which the store may still learn that it applied the call (a
 * reply lost with its connection, which a copy sent once the client is back can tell): `outcome`
 * resolves with the call's decision if it was applied, and with undefined if it was not or cannot
 * be told. The resilient store, which answered the call instead, gives such a decision back as it
 * gives back a reply that came after the deadline: one mechanism for both. Returns `error`.
 */
export function withLateOutcome<E, D>(error: E, outcome: Promise<D | undefined>): E {
  if (typeof error === 'object' && error !== null) LATE_OUTCOMES.set(error, outcome);
  return error;
}

/** What a store said it may yet learn of the call that failed with `error`; see {@link withLateOutcome}. */
export function lateOutcomeOf<D>(error: unknown): Promise<D | undefined> | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  return LATE_OUTCOMES.get(error) as Promise<D | undefined> | undefined;
}

/**
 * Whether a store call's error means that the store cannot serve, and so counts against its
 * server: it opens the circuit breaker, starts an outage and its warning, and `onStoreError`
 * answers. Everything but the call's own errors does: a lost or refused connection, a
 * `StoreTimeoutError`, `StoreNotConnectedError` or `StoreLateError`, a client that gave up or was
 * closed, and every reply that speaks of the server rather than of the call (`LOADING`, `BUSY`,
 * `MASTERDOWN`, `READONLY`, `CLUSTERDOWN`, `OOM`, `MISCONF`, `NOREPLICAS`, `NOAUTH`, `NOPERM`, a
 * `NOSCRIPT` the store could not recover from, or an error a proxy in between makes up for a
 * server it lost), as well as whatever a store of your own throws.
 *
 * The call's own errors are those raised in this process while preparing the call or reading its
 * reply (a {@link RateLimitConfigError} for a value no window can be computed from, or a
 * {@link StoreCallError}), and the replies in which the server decided this call could not be
 * decided (see `CALLS_OWN_REPLY`). They reject that call alone; a function of yours that throws
 * never gets this far, since every one runs before the call is made.
 *
 * Anything not known to be the call's own counts: an outage taken for a call's error would fail
 * every request with that error while the store is down, where `onStoreError` should answer.
 */
export function isStoreFailure(error: unknown): boolean {
  if (error instanceof RateLimitConfigError || error instanceof StoreCallError) return false;
  return !(isError(error) && CALLS_OWN_REPLY.test(error.message));
}

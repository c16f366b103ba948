import { type ArgumentsHost, type ExecutionContext } from '@nestjs/common';
import { type HeaderMode } from './http-headers.js';
import { type RateLimitDecision } from '../store-contract/store.interface.js';
import { type PendingOutcomes, type Settle } from './pending-outcomes.js';
import { type ForwardedRequest } from './proxy-trust.js';

/**
 * A route label in the making, kept per handler: the two parts it was built from last time and
 * the label itself, so a transport can tell whether the label still holds without building a
 * string on every call.
 */
export interface RouteMemo {
  first: unknown;
  second: unknown;
  label: string;
}

// Matches no part a transport reads, so the first call always builds the label.
const UNSET = Symbol('unset');

export function newRouteMemo(): RouteMemo {
  return { first: UNSET, second: UNSET, label: '' };
}

/** Why a call is turned away. */
export interface Rejection {
  /** `'limited'`: over a limit (429); `'unavailable'`: the store fails and `onStoreError` is `'deny'` (503). */
  readonly reason: 'limited' | 'unavailable';
  readonly message: string;
  readonly decision: RateLimitDecision;
}

/**
 * What the guard needs from one kind of execution context (`context.getType()`): who a call
 * counts against, which route it is, how to tell the client about a decision and how to turn a
 * call away. Implementations read the context's arguments by index, which allocates nothing.
 */
export interface Transport {
  /**
   * The request of the call as the transport knows it (the HTTP request, the GraphQL context's
   * request, the Socket.IO handshake request, the RPC message), or undefined.
   */
  request(context: ArgumentsHost): unknown;
  /** The user the call carries, where {@link tracker} looks for one, or undefined. */
  user(context: ArgumentsHost): unknown;
  /** Who the call counts against when no `getTracker` option is given. */
  tracker(context: ExecutionContext, ipv6Subnet: number): string;
  /**
   * Whether the call plainly says who it is (an `Authorization` header) yet has no user for
   * {@link tracker}: the user is authenticated only after the rate-limit guard. Left out where a
   * transport cannot tell as clearly.
   */
  credentialsWithoutUser?(context: ExecutionContext): boolean;
  /**
   * Whether a call that {@link tracker} counts against its address came through a proxy, and
   * whether the framework trusts it; undefined when the call carries no forwarding header or
   * has a user. Left out where the transport knows no framework setting for it.
   */
  forwardedRequest?(context: ExecutionContext): ForwardedRequest | undefined;
  /**
   * The route's label, e.g. `GET /items/:id`, `Query.books`, `ws:chat`, `rpc:sum`: `memo.label`
   * when the call's route matches the one memo was last set for, so a repeated route returns the
   * very same string. `place` (`Class.method`) stands in when the transport knows no route.
   */
  route(context: ExecutionContext, memo: RouteMemo, place: string): string;
  /** Tells the client about a decision where the transport can (HTTP response headers). */
  report(
    context: ExecutionContext,
    mode: HeaderMode,
    policyHeader: string,
    decision: RateLimitDecision,
  ): void;
  /**
   * The error that turns the call away, in the shape the transport's exception filters pass on
   * to the client. A promise only while an optional package is loaded, the first time.
   */
  reject(context: ExecutionContext, rejection: Rejection): Error | Promise<Error>;
  /**
   * Calls `listener` if the caller goes away (a closed connection) and returns how to stop
   * listening; undefined where the transport cannot tell. Used while a call waits for a slot.
   */
  abandoned?(context: ExecutionContext, listener: () => void): (() => void) | undefined;
  /**
   * Arranges for `settle` to be told once how the call ends, for policies that count only some
   * outcomes or hold a lease while the call runs. Returns whether nothing has taken charge of
   * telling it yet: then the guard settles the call itself if it is turned away later. HTTP
   * follows the response; the other transports leave the call in `pending` for
   * `RateLimitInterceptor`.
   */
  watchOutcome(context: ExecutionContext, settle: Settle, pending: PendingOutcomes): () => boolean;
}

/** {@link Transport.watchOutcome} of the transports whose outcome only an interceptor sees. */
export function throughInterceptor(
  context: ExecutionContext,
  settle: Settle,
  pending: PendingOutcomes,
): () => boolean {
  return pending.leave(context, settle);
}

/** An emitter's `once`/`off`, as Node streams and sockets have them. */
interface EmitterLike {
  once?(event: string, listener: () => void): unknown;
  removeListener?(event: string, listener: () => void): unknown;
  /** Node streams: set once they have closed, when the event has already fired. */
  closed?: boolean;
  destroyed?: boolean;
}

const nothingToUndo = () => {};

/**
 * Listens once for `event` on `emitter`, if it is one; see {@link Transport.abandoned}. A stream
 * that has closed already will not say so again: the listener is called at once.
 */
export function onceEvent(
  emitter: unknown,
  event: string,
  listener: () => void,
): (() => void) | undefined {
  const target = emitter as EmitterLike | undefined;
  if (typeof target?.once !== 'function') return undefined;
  if (target.closed === true || target.destroyed === true) {
    queueMicrotask(listener);
    return nothingToUndo;
  }
  target.once(event, listener);
  return () => target.removeListener?.(event, listener);
}

/** The wait to announce for a rejection, or undefined when no wait would help (`Infinity`). */
export function finiteWait(decision: RateLimitDecision): number | undefined {
  return Number.isFinite(decision.retryAfterMs) ? decision.retryAfterMs : undefined;
}

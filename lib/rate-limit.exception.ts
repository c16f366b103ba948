import { HttpException, HttpStatus, IntrinsicException } from '@nestjs/common';
import { type RateLimitDecision } from './store-contract/store.interface.js';

/** The 429 message when a request's cost exceeds what a policy can ever allow. */
export const COST_TOO_HIGH_MESSAGE = 'Request cost exceeds the rate limit';
/** The 503 message while the store fails and `onStoreError` is `'deny'`. */
export const STORE_UNAVAILABLE_MESSAGE = 'Rate limiting is unavailable';

/**
 * A wait in whole seconds, rounded up and never 0, so clients do not retry too early: what
 * `Retry-After`, the error payloads and a GraphQL error's `retryAfter` say.
 */
export function waitSeconds(retryAfterMs: number): number {
  return Math.max(1, Math.ceil(retryAfterMs / 1000));
}

/**
 * Thrown when a call is over its limit: by the guard, and by `RateLimitService.acquire` and
 * `run`. It is a plain `HttpException`, so the application's exception filters see it like any
 * other: 429, or 503 when the store failed and `onStoreError` (the module's or a policy's) is
 * `'deny'`, so that a handler that lets it through answers as a denied route does.
 *
 * @example
 * ```ts
 * try {
 *   await limits.run('partner', PARTNER, () => callPartner());
 * } catch (error) {
 *   if (error instanceof RateLimitException && error.getStatus() === 503) useCachedQuote();
 *   else throw error;
 * }
 * ```
 */
export class RateLimitException extends HttpException {
  constructor(
    message: string,
    /** The decision that rejected the request. */
    readonly decision: RateLimitDecision,
  ) {
    const status =
      decision.degraded === 'deny' ? HttpStatus.SERVICE_UNAVAILABLE : HttpStatus.TOO_MANY_REQUESTS;
    super({ statusCode: status, message }, status);
  }

  /** How long until the call could proceed, in ms (`decision.retryAfterMs`); `Infinity`: never. */
  get retryAfterMs(): number {
    return this.decision.retryAfterMs;
  }
}

/** `extensions` of a {@link GraphQLRateLimitError}, as the client receives them. */
export interface GraphQLRateLimitExtensions {
  /** `'TOO_MANY_REQUESTS'` over a limit; `'SERVICE_UNAVAILABLE'` while the store fails under `onStoreError: 'deny'`. */
  code: 'TOO_MANY_REQUESTS' | 'SERVICE_UNAVAILABLE';
  /** Seconds to wait, rounded up, as in `Retry-After`; absent when no wait would help. */
  retryAfter?: number;
  /** The same wait in milliseconds. */
  retryAfterMs?: number;
}

/**
 * Thrown by the guard when a GraphQL resolver call is turned away. graphql-js copies an error's
 * `extensions` into the response, so the client sees, e.g.:
 *
 * @example
 * ```json
 * { "message": "Too Many Requests", "path": ["books"],
 *   "extensions": { "code": "TOO_MANY_REQUESTS", "retryAfter": 30, "retryAfterMs": 29874 } }
 * ```
 *
 * It is an `IntrinsicException` rather than an `HttpException`: Nest does not log it as an
 * error, and Apollo's driver does not recast it as `INTERNAL_SERVER_ERROR` with a status.
 */
export class GraphQLRateLimitError extends IntrinsicException {
  readonly extensions: GraphQLRateLimitExtensions;

  constructor(
    message: string,
    code: GraphQLRateLimitExtensions['code'],
    retryAfterMs: number | undefined,
    /** The decision that turned the call away. */
    readonly decision: RateLimitDecision,
  ) {
    super(message);
    this.name = 'GraphQLRateLimitError';
    this.extensions =
      retryAfterMs === undefined
        ? { code }
        : { code, retryAfter: waitSeconds(retryAfterMs), retryAfterMs };
  }
}

import { HttpException, HttpStatus } from '@nestjs/common';
import { type RateLimitDecision } from './stores/store.interface.js';

/** The 429 message when a request's cost exceeds what a policy can ever allow. */
export const COST_TOO_HIGH_MESSAGE = 'Request cost exceeds the rate limit';
/** The 503 message while the store fails and `onStoreError` is `'deny'`. */
export const STORE_UNAVAILABLE_MESSAGE = 'Rate limiting is unavailable';

/**
 * Thrown by the guard when a request is over its limit. It is a plain `HttpException` (429),
 * so the application's exception filters see it like any other.
 */
export class RateLimitException extends HttpException {
  constructor(
    message: string,
    /** The decision that rejected the request. */
    readonly decision: RateLimitDecision,
  ) {
    super({ statusCode: HttpStatus.TOO_MANY_REQUESTS, message }, HttpStatus.TOO_MANY_REQUESTS);
  }
}

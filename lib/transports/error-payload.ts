import { waitSeconds } from '../rate-limit.exception.js';
import { finiteWait, type Rejection } from './transport.js';

/**
 * The error object sent to WebSocket and microservice clients: what an HTTP client reads from the
 * status, the body and `Retry-After`, in one object. The wait is left out when no wait would help.
 */
export function rejectionPayload({ reason, message, decision }: Rejection): RateLimitErrorPayload {
  const payload: RateLimitErrorPayload = {
    status: 'error',
    statusCode: reason === 'limited' ? 429 : 503,
    message,
  };
  const wait = finiteWait(decision);
  if (wait !== undefined) {
    payload.retryAfterMs = wait;
    payload.retryAfter = waitSeconds(wait);
  }
  return payload;
}

/**
 * The error object a WebSocket client receives on its `exception` event, and a microservice
 * client as the error of its call, when the guard turns a message away.
 *
 * @example
 * ```ts
 * socket.on('exception', (error: RateLimitErrorPayload) => {
 *   if (error.statusCode === 429) setTimeout(retry, error.retryAfterMs);
 * });
 * ```
 */
export interface RateLimitErrorPayload {
  status: 'error';
  statusCode: 429 | 503;
  message: string;
  /** Milliseconds until the call would be allowed. */
  retryAfterMs?: number;
  /** The same wait in whole seconds, rounded up, as in `Retry-After`. */
  retryAfter?: number;
}

import { type ArgumentsHost, ServiceUnavailableException } from '@nestjs/common';
import { retryAfterSeconds, writeRateLimitHeaders } from '../http-headers.js';
import {
  type HttpRequestLike,
  type HttpResponseLike,
  requestUser,
  routeMethod,
  routePattern,
  setHeader,
} from '../http-request.js';
import { credentialsWithoutUser, defaultTracker } from '../trackers.js';
import { forwardedRequest } from '../proxy-trust.js';
import { RateLimitException } from '../../rate-limit.exception.js';
import { onceEvent, type Rejection, type Transport } from '../transport.js';

// Express and Fastify both hand guards (request, response, next) as the context's arguments.
const request = (context: ArgumentsHost) => context.getArgByIndex<HttpRequestLike>(0);
const response = (context: ArgumentsHost) => context.getArgByIndex<HttpResponseLike>(1);

/** The Node response under an Express response or a Fastify reply. */
interface NodeResponseLike {
  statusCode?: number;
  writableFinished?: boolean;
  closed?: boolean;
  destroyed?: boolean;
  once?(event: 'close', listener: () => void): unknown;
}

const neverUnclaimed = () => false;

/** Controllers on Express or Fastify: keyed by method and route pattern, answered with 429. */
export const httpTransport: Transport = {
  request,

  user: (context) => requestUser(request(context)),

  tracker: (context, ipv6Subnet) => defaultTracker(request(context), ipv6Subnet),

  credentialsWithoutUser: (context) => credentialsWithoutUser(request(context)),

  forwardedRequest: (context) => forwardedRequest(request(context)),

  route(context, memo, place) {
    const req = request(context);
    const method = routeMethod(req);
    const pattern = routePattern(req);
    if (method !== memo.first || pattern !== memo.second) {
      memo.first = method;
      memo.second = pattern;
      memo.label = `${method} ${pattern ?? place}`;
    }
    return memo.label;
  },

  report(context, mode, policyHeader, decision) {
    writeRateLimitHeaders(response(context), mode, policyHeader, decision);
  },

  abandoned(context, listener) {
    // The Node response closes early when the client goes away before it is sent.
    const reply = response(context) as HttpResponseLike & { raw?: unknown };
    return onceEvent(reply?.raw ?? reply, 'close', listener);
  },

  watchOutcome(context, settle) {
    // The Node response, once it closes: a status set by an exception filter, another guard or
    // the handler counts, and a client gone before the response was complete is a failure.
    const reply = response(context) as HttpResponseLike & { raw?: NodeResponseLike };
    const res = (reply?.raw ?? reply) as NodeResponseLike | undefined;
    if (typeof res?.once !== 'function') {
      settle(false);
      return neverUnclaimed;
    }
    const closed = () => settle(res.writableFinished === true && (res.statusCode ?? 500) < 400);
    // The client may have gone while the guard was deciding: 'close' has fired already.
    if (res.closed === true || res.destroyed === true) closed();
    else res.once('close', closed);
    return neverUnclaimed;
  },

  reject(context, { reason, message, decision }: Rejection) {
    if (reason === 'limited') return new RateLimitException(message, decision);
    setHeader(response(context), 'Retry-After', retryAfterSeconds(decision.retryAfterMs));
    return new ServiceUnavailableException(message);
  },
};

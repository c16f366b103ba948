import { type ArgumentsHost } from '@nestjs/common';
import { retryAfterSeconds, writeRateLimitHeaders } from '../http-headers.js';
import {
  type HttpRequestLike,
  type HttpResponseLike,
  requestUser,
  setHeader,
} from '../http-request.js';
import {
  addressTracker,
  credentialsWithoutUser,
  defaultTracker,
  userTracker,
} from '../trackers.js';
import { GraphQLRateLimitError } from '../../rate-limit.exception.js';
import { forwardedRequest } from '../proxy-trust.js';
import { finiteWait, onceEvent, throughInterceptor, type Transport } from '../transport.js';

/** A response whose headers may already be out (Express `headersSent`, Fastify `sent`). */
interface ResponseLike extends HttpResponseLike {
  headersSent?: boolean;
  sent?: boolean;
}

/**
 * The GraphQL context object, as the common servers build it: Apollo `{ req }` (plus `res` when
 * the app's `context` function adds it), Mercurius `{ reply }`, graphql-ws `{ extra: { request } }`.
 */
interface GraphQLContextLike {
  req?: HttpRequestLike & { res?: ResponseLike };
  request?: HttpRequestLike;
  res?: ResponseLike;
  reply?: ResponseLike & { request?: HttpRequestLike };
  extra?: { request?: HttpRequestLike };
  user?: unknown;
}

/** The parts of graphql-js `GraphQLResolveInfo` the guard reads. */
interface ResolveInfoLike {
  parentType?: { name?: unknown };
  fieldName?: unknown;
}

// A resolver's arguments are (parent, args, context, info).
const gqlContext = (context: ArgumentsHost) =>
  context.getArgByIndex<GraphQLContextLike | undefined>(2) ?? {};
const resolveInfo = (context: ArgumentsHost) =>
  context.getArgByIndex<ResolveInfoLike | undefined>(3);

const operationRequest = (ctx: GraphQLContextLike) =>
  ctx.req ?? ctx.request ?? ctx.reply?.request ?? ctx.extra?.request;

/** The user of an operation: the context's `user`, else its request's. */
const operationUser = (ctx: GraphQLContextLike) => ctx.user ?? requestUser(operationRequest(ctx));

/** The HTTP response of the operation, if there is one and its headers can still be set. */
function responseOf(ctx: GraphQLContextLike): ResponseLike | undefined {
  // Express links the request to its response; a Fastify reply must be in the context itself.
  const res = ctx.res ?? ctx.reply ?? ctx.req?.res;
  if (res == null || typeof res !== 'object' || res.headersSent === true || res.sent === true) {
    return undefined;
  }
  return res;
}

/**
 * Resolvers (`getType() === 'graphql'`): keyed by `<parent type>.<field>`, e.g. `Query.books`;
 * answered with a {@link GraphQLRateLimitError}, and headers on the HTTP response when the
 * context holds one. Tracker: the context's `user`, else the request's user, else its address.
 */
export const graphqlTransport: Transport = {
  request: (context) => operationRequest(gqlContext(context)),

  user: (context) => operationUser(gqlContext(context)),

  tracker(context, ipv6Subnet) {
    const ctx = gqlContext(context);
    const req = operationRequest(ctx);
    return (
      userTracker(operationUser(ctx)) ??
      (req == null ? addressTracker(undefined, ipv6Subnet) : defaultTracker(req, ipv6Subnet))
    );
  },

  credentialsWithoutUser(context) {
    const ctx = gqlContext(context);
    const req = operationRequest(ctx);
    return ctx.user == null && req != null && credentialsWithoutUser(req);
  },

  forwardedRequest(context) {
    const ctx = gqlContext(context);
    const req = operationRequest(ctx);
    return userTracker(operationUser(ctx)) === undefined && req != null
      ? forwardedRequest(req)
      : undefined;
  },

  route(context, memo, place) {
    const info = resolveInfo(context);
    const type = info?.parentType?.name;
    const field = info?.fieldName;
    if (type !== memo.first || field !== memo.second) {
      memo.first = type;
      memo.second = field;
      memo.label =
        typeof type === 'string' && typeof field === 'string' ? `${type}.${field}` : place;
    }
    return memo.label;
  },

  report(context, mode, policyHeader, decision) {
    const res = responseOf(gqlContext(context));
    // Each limited field of an operation writes them; the last decision's values are sent.
    if (res !== undefined) writeRateLimitHeaders(res, mode, policyHeader, decision);
  },

  abandoned(context, listener) {
    // The HTTP response under the operation closes early when the client goes away.
    const ctx = gqlContext(context);
    const res = (ctx.res ?? ctx.reply ?? ctx.req?.res) as { raw?: unknown } | undefined;
    return onceEvent(res?.raw ?? res, 'close', listener);
  },

  watchOutcome: throughInterceptor,

  reject(context, { reason, message, decision }) {
    if (reason === 'unavailable') {
      const res = responseOf(gqlContext(context));
      if (res !== undefined) {
        setHeader(res, 'Retry-After', retryAfterSeconds(decision.retryAfterMs));
      }
    }
    const code = reason === 'limited' ? 'TOO_MANY_REQUESTS' : 'SERVICE_UNAVAILABLE';
    return new GraphQLRateLimitError(message, code, finiteWait(decision), decision);
  },
};

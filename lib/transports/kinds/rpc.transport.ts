import { type ArgumentsHost } from '@nestjs/common';
import { addressTracker, userTracker } from '../trackers.js';
import { optionalExport, whenLoaded } from './optional-export.js';
import { rejectionPayload } from '../error-payload.js';
import { throughInterceptor, type Transport } from '../transport.js';

/** The parts of a microservice transport's context the guard reads; each is optional. */
interface RpcContextLike {
  /** TCP (and RabbitMQ): the pattern. */
  getPattern?(): unknown;
  /** NATS. */
  getSubject?(): unknown;
  /** Redis. */
  getChannel?(): unknown;
  /** Kafka, MQTT. */
  getTopic?(): unknown;
  /** TCP: the socket the message came over. */
  getSocketRef?(): { netSocket?: { remoteAddress?: string } } | undefined;
}

type ErrorClass = new (error: object) => Error;
// The microservice exception filter only passes on a real RpcException, so it must be the package's.
const rpcException = optionalExport<ErrorClass>(
  async () => (await import('@nestjs/microservices')).RpcException,
);

const data = (context: ArgumentsHost) => context.getArgByIndex<unknown>(0);
const rpcContext = (context: ArgumentsHost) => context.getArgByIndex<RpcContextLike | undefined>(1);

/** The `user` a caller put in the message, as a gateway forwards the user it authenticated. */
function messageUser(message: unknown): unknown {
  return message != null && typeof message === 'object'
    ? (message as { user?: unknown }).user
    : undefined;
}

function patternOf(ctx: RpcContextLike | undefined): unknown {
  if (ctx == null || typeof ctx !== 'object') return undefined;
  return ctx.getPattern?.() ?? ctx.getSubject?.() ?? ctx.getChannel?.() ?? ctx.getTopic?.();
}

/**
 * `@MessagePattern` and `@EventPattern` handlers: keyed by pattern (`rpc:<pattern>`), answered
 * with an `RpcException` whose error object holds the wait.
 *
 * Tracker: the `user` a caller put in the message (`data.user.id`, else `data.user.sub`), as a
 * gateway forwards the user it authenticated; else, over TCP, the caller's address; else one
 * bucket shared by every caller of the pattern.
 */
export const rpcTransport: Transport = {
  request: data,

  user: (context) => messageUser(data(context)),

  tracker(context, ipv6Subnet) {
    const user = userTracker(messageUser(data(context)));
    if (user !== undefined) return user;
    const ctx = rpcContext(context);
    const socket = typeof ctx?.getSocketRef === 'function' ? ctx.getSocketRef() : undefined;
    return addressTracker(socket?.netSocket?.remoteAddress, ipv6Subnet);
  },

  route(context, memo, place) {
    const pattern = patternOf(rpcContext(context));
    if (pattern !== memo.first) {
      memo.first = pattern;
      memo.label = `rpc:${typeof pattern === 'string' ? pattern : place}`;
    }
    return memo.label;
  },

  report() {},

  watchOutcome: throughInterceptor,

  reject(_context, rejection) {
    const payload = rejectionPayload(rejection);
    return whenLoaded(rpcException(), (RpcException) => new RpcException(payload));
  },
};

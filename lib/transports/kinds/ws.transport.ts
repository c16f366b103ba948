import { type ArgumentsHost } from '@nestjs/common';
import { addressTracker, userTracker } from '../trackers.js';
import { optionalExport, whenLoaded } from './optional-export.js';
import { rejectionPayload } from '../error-payload.js';
import { onceEvent, throughInterceptor, type Transport } from '../transport.js';

/** The parts of a Socket.IO socket (or a `ws` WebSocket) the guard reads. */
interface WsClientLike {
  /** Socket.IO: per-socket data, where a connection middleware puts the verified user. */
  data?: { user?: unknown };
  /** Socket.IO: the handshake request, where HTTP middleware (e.g. Passport) put its user. */
  request?: { user?: unknown };
  handshake?: { address?: string };
  /** `ws`: the TCP socket underneath. */
  _socket?: { remoteAddress?: string };
}

type ErrorClass = new (error: object) => Error;
// The WebSocket exception filter only passes on a real WsException, so it must be the package's.
const wsException = optionalExport<ErrorClass>(
  async () => (await import('@nestjs/websockets')).WsException,
);

const client = (context: ArgumentsHost) => context.getArgByIndex<WsClientLike>(0) ?? {};

/** The user of a socket: the one a connection middleware verified, else the handshake request's. */
const socketUser = (socket: WsClientLike) => socket.data?.user ?? socket.request?.user;

/**
 * `@SubscribeMessage` handlers of WebSocket gateways: keyed by event (`ws:<event>`), answered
 * with a `WsException` whose error object holds the wait. The connection stays open.
 *
 * Tracker: `client.data.user`, else `client.request.user` (id, else sub), else the address of the
 * handshake. Not `handshake.auth`: the client writes it, so trusting it would let a client pick
 * a fresh bucket at will.
 */
export const wsTransport: Transport = {
  request: (context) => client(context).request,

  user: (context) => socketUser(client(context)),

  tracker(context, ipv6Subnet) {
    const socket = client(context);
    return (
      userTracker(socketUser(socket)) ??
      addressTracker(socket.handshake?.address ?? socket._socket?.remoteAddress, ipv6Subnet)
    );
  },

  route(context, memo, place) {
    // Nest appends the handler's event name as the last argument of a WebSocket call.
    const event: unknown = context.getArgByIndex(context.getArgs().length - 1);
    if (event !== memo.first) {
      memo.first = event;
      memo.label = `ws:${typeof event === 'string' ? event : place}`;
    }
    return memo.label;
  },

  report() {},

  abandoned(context, listener) {
    // Socket.IO sockets say `disconnect`; `ws` sockets say `close`.
    const socket = client(context);
    return onceEvent(socket, socket.handshake === undefined ? 'close' : 'disconnect', listener);
  },

  watchOutcome: throughInterceptor,

  reject(_context, rejection) {
    const payload = rejectionPayload(rejection);
    return whenLoaded(wsException(), (WsException) => new WsException(payload));
  },
};

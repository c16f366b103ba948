import { type ArgumentsHost } from '@nestjs/common';
import { transportFor } from './index.js';

// `any` by default, as Nest's own `switchToHttp().getRequest()`: what a request or a user holds is
// the app's to say, and a recipe reads it without declaring its type first.
/* eslint-disable @typescript-eslint/no-explicit-any */

/**
 * The request of a call, on every transport: the Express request or the Fastify request (HTTP),
 * the request in the GraphQL context, the HTTP request that opened a Socket.IO connection, the
 * message of an RPC call. Undefined where there is none (a `ws` socket, a GraphQL context without
 * one, a context type the module does not know).
 *
 * @example threshold: (ctx) => (requestOf(ctx)?.headers['x-api-key'] ? 100 : 10)
 */
export function requestOf<Request = any>(context: ArgumentsHost): Request | undefined {
  return transportFor(context.getType())?.request(context) as Request | undefined;
}

/**
 * The user of a call, where the default tracker finds it: `req.user` on HTTP, or on Fastify
 * `req.raw.user`, which is where Nest middleware puts it; the GraphQL context's `user`, else its
 * request's; `client.data.user`, else `client.request.user`, on a WebSocket; `data.user` in an
 * RPC message. Undefined when the call carries none.
 *
 * @example threshold: (ctx) => (userOf(ctx)?.plan === 'pro' ? 100 : 10)
 */
export function userOf<User = any>(context: ArgumentsHost): User | undefined {
  return (transportFor(context.getType())?.user(context) ?? undefined) as User | undefined;
}

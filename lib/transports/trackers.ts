import { type HttpRequestLike, requestUser } from './http-request.js';
import { normalizeIp } from './client-ip.js';

/**
 * The tracker of an authenticated user: `user:<id>` from `user.id`, else `user.sub`; undefined
 * when there is no usable id. The `user:` / `ip:` prefixes keep a user named `1.2.3.4` apart from
 * the client at 1.2.3.4.
 */
export function userTracker(user: unknown): string | undefined {
  if (user == null || typeof user !== 'object') return undefined;
  const { id, sub } = user as { id?: unknown; sub?: unknown };
  const value = id ?? sub;
  if ((typeof value === 'string' && value !== '') || typeof value === 'number') {
    return `user:${value}`;
  }
  return typeof value === 'bigint' ? `user:${value}` : undefined;
}

/** The tracker of a client address; missing or malformed addresses share one bucket. */
export function addressTracker(address: string | undefined, ipv6Subnet: number): string {
  return `ip:${normalizeIp(address, ipv6Subnet)}`;
}

/**
 * Who an HTTP request counts against: the authenticated user (`req.user.id`, else
 * `req.user.sub`), otherwise the client address. On Fastify, Nest middleware sees the raw Node
 * request, so a user set there is found on `req.raw.user`.
 */
export function defaultTracker(req: HttpRequestLike, ipv6Subnet: number): string {
  return (
    userTracker(requestUser(req)) ?? addressTracker(req.ip ?? req.socket?.remoteAddress, ipv6Subnet)
  );
}

/**
 * Whether an HTTP request says who it is (an `Authorization` header) yet carries no user: the
 * sign of an auth guard that runs only after the rate-limit guard, so the default tracker counts
 * the user against the IP.
 */
export function credentialsWithoutUser(req: HttpRequestLike): boolean {
  return requestUser(req) == null && req.headers?.authorization !== undefined;
}

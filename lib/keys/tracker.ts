import { type HttpRequestLike } from '../http/request.js';
import { normalizeIp } from './ip.js';

/**
 * Who a request counts against: the authenticated user (`req.user.id`, else `req.user.sub`),
 * otherwise the client address. The `user:` / `ip:` prefixes keep a user named `1.2.3.4`
 * apart from the client at 1.2.3.4.
 */
export function defaultTracker(req: HttpRequestLike, ipv6Subnet: number): string {
  const user = req.user;
  if (user != null && typeof user === 'object') {
    const id = user.id ?? user.sub;
    if ((typeof id === 'string' && id !== '') || typeof id === 'number' || typeof id === 'bigint') {
      return `user:${id}`;
    }
  }
  return `ip:${normalizeIp(req.ip ?? req.socket?.remoteAddress, ipv6Subnet)}`;
}

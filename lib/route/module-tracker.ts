import { type WarningLogger, warnIfAuthenticatedLate } from './auth-order-warning.js';
import { encodeKeyPart, standInKeyPart } from '../keys/route-keys.js';
import { type ResolvedRateLimitOptions } from '../options/rate-limit.options.js';
import { isPromise } from '../templates/policy-template.js';
import { callUserFunction, EXPIRED, type FunctionBound } from '../templates/user-functions.js';
import { type RouteCall } from './route-plan.js';
import { type ProxyTrustWarning } from './proxy-trust-warning.js';

/**
 * Who a call counts against by the module's tracker, as a key part: `getTracker`'s value, else
 * the transport's default (user id, else IP), which warns once per route about credentials that
 * came without a user, and once per app about a proxy the framework does not trust. Only a promise is awaited, through `bound`; a
 * `getTracker` whose promise does not settle in time leaves the default tracker to stand in,
 * marked so that it shares no bucket with any value `getTracker` returns.
 */
export function moduleTracker(
  options: Pick<ResolvedRateLimitOptions, 'getTracker' | 'ipv6Subnet'>,
  bound: FunctionBound,
  call: RouteCall,
  logger: WarningLogger,
  proxyTrust: ProxyTrustWarning,
): string | Promise<string> {
  const { getTracker, ipv6Subnet } = options;
  const { context, transport, plan } = call;
  if (getTracker === undefined) {
    if (!plan.warned.authOrder) warnIfAuthenticatedLate(call, logger);
    if (!proxyTrust.settled) proxyTrust.check(call);
    return encodeKeyPart(transport.tracker(context, ipv6Subnet));
  }
  const value: unknown = callUserFunction(getTracker, 'getTracker', context, plan.where);
  if (!isPromise(value)) return encodeKeyPart(checkTracker(value, plan.place));
  return bound
    .settle(value, 'getTracker', context, plan.where)
    .then((settled) =>
      settled === EXPIRED
        ? standInKeyPart(transport.tracker(context, ipv6Subnet))
        : encodeKeyPart(checkTracker(settled, plan.place)),
    );
}

function checkTracker(tracker: unknown, place: string): string {
  if (typeof tracker === 'string' && tracker !== '') return tracker;
  if (typeof tracker === 'number' && Number.isFinite(tracker)) return String(tracker);
  throw new TypeError(
    `RateLimitModule getTracker must return a non-empty string; it returned ${String(tracker)} for ${place}`,
  );
}

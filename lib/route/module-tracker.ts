import { encodeKeyPart, standInKeyPart } from '../keys/route-keys.js';
import { type ResolvedRateLimitOptions } from '../options/rate-limit.options.js';
import { isPromise } from '../templates/policy-template.js';
import { callUserFunction, EXPIRED, type FunctionBound } from '../templates/user-functions.js';
import { type RouteCall } from './route-plan.js';

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

/** Where the docs show how to authenticate before the guard runs; they ship in the package. */
export const GUARD_ORDER_DOCS =
  'nest-rate-limit/docs/troubleshooting.md#every-request-counts-against-the-ip-not-the-user';

export interface WarningLogger {
  warn(message: string): void;
}

/**
 * Warns once per route when a call that reaches the default tracker carries credentials but no
 * user: an auth guard in `@UseGuards` runs after the global rate-limit guard, so every user of
 * the route silently shares their IP's quota. After the warning, a flag on the plan is all it
 * costs.
 */
export function warnIfAuthenticatedLate(call: RouteCall, logger: WarningLogger): void {
  const { context, transport, plan } = call;
  if (plan.warned.authOrder || transport.credentialsWithoutUser?.(context) !== true) return;
  plan.warned.authOrder = true;
  const route = transport.route(context, plan.route, plan.place);
  logger.warn(
    `${route} (${plan.place}) got a request with an Authorization header but no user when the rate-limit guard ran, so it counts against the client's IP: the user is authenticated too late (a guard in @UseGuards runs after global guards). Authenticate in middleware or in a global guard registered before RateLimitModule, or set getTracker: see ${GUARD_ORDER_DOCS}`,
  );
}

/** Where the docs show how to tell the framework about its proxies; they ship in the package. */
export const PROXY_DOCS = 'nest-rate-limit/docs/troubleshooting.md#behind-a-proxy';

// Apps warned about already, for an app whose modules each build a guard of their own.
const warnedApps = new WeakSet<object>();

/**
 * Warns once per app when a request that counts against its address came through a proxy
 * (`X-Forwarded-For` or `Forwarded`) the framework does not trust: its address is then the
 * proxy's, and every client shares one limit. The first forwarded request settles it either
 * way, since an app's trust in proxies does not change; until then each call on the default
 * tracker costs a header lookup, and after it, a flag.
 */
export class ProxyTrustWarning {
  /** Set once a forwarded request has been seen: nothing is looked at again. */
  settled = false;

  constructor(private readonly logger: WarningLogger) {}

  check({ context, transport }: RouteCall): void {
    const forwarded = transport.forwardedRequest?.(context);
    if (forwarded === undefined) return;
    this.settled = true;
    const { header, app, fix } = forwarded;
    if (fix === undefined || warnedApps.has(app)) return;
    warnedApps.add(app);
    this.logger.warn(
      `A request came with ${header}, but ${fix.framework} does not trust proxies, so its address is the proxy's and every client behind the proxy shares one rate limit. Tell ${fix.framework} how many proxies to trust, e.g. ${fix.code}, or set getTracker: see ${PROXY_DOCS}`,
    );
  }
}

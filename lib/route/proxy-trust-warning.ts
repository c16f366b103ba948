import { type WarningLogger } from './auth-order-warning.js';
import { type RouteCall } from './route-plan.js';

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

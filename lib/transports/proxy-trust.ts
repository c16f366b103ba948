import { type HttpRequestLike } from './http-request.js';
import { userTracker } from './trackers.js';

/** What a request that came through a proxy says about the framework's trust in proxies. */
export interface ForwardedRequest {
  /** The header that says a proxy forwarded the request: `X-Forwarded-For` or `Forwarded`. */
  readonly header: 'X-Forwarded-For' | 'Forwarded';
  /** The framework's app, so that one app is warned about once however many guards it builds. */
  readonly app: object;
  /** The framework's name and how to make it trust the proxy; undefined when it does already. */
  readonly fix: { readonly framework: string; readonly code: string } | undefined;
}

/** An Express request (`req.app`) or a Fastify request (`req.server`, `req.raw`). */
interface FrameworkRequest extends HttpRequestLike {
  app?: { get?(setting: string): unknown };
  server?: object;
}

const EXPRESS_FIX = { framework: 'Express', code: "app.set('trust proxy', 1)" };
// One hop, as for Express: `true` would believe a made-up header from a client that reaches the
// app directly.
const FASTIFY_FIX = { framework: 'Fastify', code: 'new FastifyAdapter({ trustProxy: 1 })' };
// Stands in for a Fastify request that does not name its server.
const UNNAMED_FASTIFY_APP = {};

/**
 * The forwarding header of an HTTP request that counts against its address, and whether Express
 * (`trust proxy`) or Fastify (`trustProxy`) believes it; undefined when the request carries no
 * such header, has a user, or comes from neither framework. Without trust, `req.ip` is the
 * proxy's address, so every client behind it shares one limit.
 */
export function forwardedRequest(req: FrameworkRequest): ForwardedRequest | undefined {
  const headers = req.headers;
  if (headers === undefined) return undefined;
  let header: ForwardedRequest['header'];
  if (headers['x-forwarded-for'] !== undefined) header = 'X-Forwarded-For';
  else if (headers.forwarded !== undefined) header = 'Forwarded';
  else return undefined;
  if (userTracker(req.user ?? req.raw?.user) !== undefined) return undefined;
  const app = req.app;
  if (typeof app?.get === 'function') {
    // Express's own default is false; a hop count of 0 trusts no proxy either.
    return { header, app, fix: app.get('trust proxy') ? undefined : EXPRESS_FIX };
  }
  if (req.raw !== undefined) {
    // Fastify defines `ips` on its requests only when `trustProxy` is set.
    return {
      header,
      app: req.server ?? UNNAMED_FASTIFY_APP,
      fix: 'ips' in req ? undefined : FASTIFY_FIX,
    };
  }
  return undefined;
}

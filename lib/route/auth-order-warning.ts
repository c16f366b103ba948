import { type RouteCall } from './route-plan.js';

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

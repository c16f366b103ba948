import { type ExecutionContext } from '@nestjs/common';
import { type FieldList } from '../policy/known-fields.js';
import {
  type Duration,
  type DynamicResult,
  POLICY_FIELDS,
  type RateLimitPolicy,
} from '../policy/rate-limit.policy.js';

/** Which requests use up a route policy's quota. */
export type CountMode = 'all' | 'failures' | 'successes';
export const COUNT_MODES: readonly CountMode[] = ['all', 'failures', 'successes'];

/** A policy as written on a route: values may be functions of the request's context. */
export interface RoutePolicy extends RateLimitPolicy<ExecutionContext> {
  /**
   * Whose quota this policy counts, instead of the module's `getTracker`, e.g. the account a
   * login form names. An empty or missing value falls back to the module's tracker. The key still
   * includes the route, unless the policy's `scope` shares it beyond the route.
   *
   * @example
   * ```ts
   * tracker: (ctx) => ctx.switchToHttp().getRequest().body?.username
   * ```
   */
  tracker?: (context: ExecutionContext) => DynamicResult<string>;
  /**
   * Which requests use up the quota: `'all'` (default), only `'failures'` (the handler throws, or
   * the HTTP status is 400 or more) or only `'successes'`. Every request is counted when it
   * arrives, so requests in flight together never pass the threshold, and given back once its
   * outcome turns out not to count.
   */
  count?: CountMode;
  /**
   * Evaluate and record the policy as if enforced, but let a request it would reject through:
   * `onLimited` sees it with `decision.shadow === true`. For rolling a new limit out.
   */
  shadow?: boolean;
  /**
   * Hold a request that does not fit for up to this long, before the handler runs, instead of
   * answering 429: the bucket algorithms book its slot at once, the windows and `'concurrency'`
   * try again when a slot may have freed. A request that cannot fit in time is answered 429 at
   * once. With several policies, the route waits up to the longest `maxWait` among them. A
   * number means seconds.
   *
   * @example
   * ```ts
   * // 5 simultaneous requests pass one by one, 200 ms apart
   * @RateLimit({ algorithm: 'leaky-bucket', threshold: 5, period: '1s', burst: 1, maxWait: '2s' })
   * ```
   */
  maxWait?: Duration;
  /**
   * Which routes share this policy's budget, per tracker: `'route'` (default) gives each route
   * its own; `'controller'` shares it among the methods of one controller class; `'app'` among
   * every route of the app that says `'app'`; any other name among every route whose policy
   * carries that name. Routes share a budget when they carry the same scope and the same policy
   * (name and algorithm), so give such policies the same values; two policies of one route in
   * one scope stay two budgets. The controller is known by its class name. On a route with a
   * shared scope, every policy must count the same tracker (the module's, or one `tracker`
   * function they all share), since one decision's keys share it as Redis Cluster hash tag.
   *
   * @example
   * ```ts
   * // one budget of 60 per minute for each user across every route of the API
   * @RateLimit({ period: '1m', threshold: 60, scope: 'app' })
   * ```
   */
  scope?: RouteScope;
  /**
   * Makes the request a reservation: its `cost` is the estimate, taken when the request arrives,
   * and once the handler has succeeded this gives what it really used, charged in its place when
   * the response ends (more than the estimate is charged even past the limit, as a debt later
   * requests wait out; less is given back). `result` is what the handler returned (for an
   * observable, its last value); a header or field the handler set is read off the context.
   * Returning nothing, or a handler that throws, keeps the estimate. An integer from 0; a promise
   * is awaited.
   *
   * @example
   * ```ts
   * @RateLimit({
   *   algorithm: 'fixed-window', calendar: 'day', threshold: 10_000,
   *   cost: 2_000, // reserved up front
   *   settle: (_ctx, reply: Completion) => reply.usage.total_tokens,
   * })
   * ```
   */
  settle?: (context: ExecutionContext, result: any) => DynamicResult<number>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** Which routes share a policy's budget: see {@link RoutePolicy.scope}. */
export type RouteScope = 'route' | 'controller' | 'app' | (string & {});

/** Every field of {@link RoutePolicy}: the policy's own, and those only routes take. */
export const ROUTE_POLICY_FIELDS = {
  ...POLICY_FIELDS,
  tracker: true,
  count: true,
  shadow: true,
  maxWait: true,
  scope: true,
  settle: true,
} as const satisfies FieldList<RoutePolicy>;

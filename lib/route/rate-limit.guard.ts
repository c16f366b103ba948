import {
  type CanActivate,
  type ExecutionContext,
  HttpException,
  Inject,
  Injectable,
  Logger,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { LeaseKeeper } from '../flow/lease-keeper.js';
import { type SlotWait, waitForSlot } from '../flow/wait-for-slot.js';
import { policyHeader } from '../transports/http-headers.js';
import { KeyBuilder } from './route-keys.js';
import {
  RATE_LIMIT_MEMORY_STORE,
  RATE_LIMIT_OPTIONS,
  RATE_LIMIT_POLICY,
  RATE_LIMIT_SKIP,
} from '../rate-limit.constants.js';
import { placeName } from './rate-limit.decorator.js';
import { COST_TOO_HIGH_MESSAGE, STORE_UNAVAILABLE_MESSAGE } from '../rate-limit.exception.js';
import {
  decideWithShadow,
  type Enforce,
  featureKeys,
  type RouteFeatures,
  routeFeatures,
  settleOnOutcome,
} from './route-features.js';
import { DecisionHooks } from './decision-hooks.js';
import { moduleTracker } from './module-tracker.js';
import { type ResolvedRateLimitOptions } from '../module/rate-limit.options.js';
import { type PolicyTemplate, resolveCost } from './policy-template.js';
import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import { UserFunctionBounds } from './user-functions.js';
import { type RateLimitDecision, RateLimitStore } from '../stores/store.interface.js';
import {
  newRouteMemo,
  type Rejection,
  type RouteMemo,
  type Transport,
  transportFor,
} from '../transports/index.js';

/** Everything about one handler the guard needs per request, worked out on its first request. */
interface HandlerPlan {
  readonly templates: readonly PolicyTemplate[];
  readonly place: string;
  /** `@RateLimit on <place>`, for errors and warnings. */
  readonly where: string;
  /** Present when no policy value depends on the request: then nothing is resolved per request. */
  readonly policies: readonly ResolvedPolicy[] | undefined;
  readonly tails: readonly string[] | undefined;
  readonly policyHeader: string | undefined;
  /** Present when every cost is a plain number. */
  readonly costs: readonly number[] | undefined;
  // The key's constant head for the route seen last; a handler almost always has one route.
  readonly route: RouteMemo;
  routeLabel: string | undefined;
  keyHead: string;
  /** Own trackers, outcome counting or shadow mode; undefined when the route uses none. */
  readonly features: RouteFeatures | undefined;
}

/**
 * Applies `@RateLimit` policies on every transport: HTTP (Express, Fastify), GraphQL resolvers,
 * WebSocket gateways and microservice handlers. Registered globally by default; with
 * `globalGuard: false`, attach it yourself.
 *
 * @example
 * ```ts
 * @UseGuards(RateLimitGuard)
 * @RateLimit({ period: '1m', threshold: 30 })
 * @Controller('search')
 * export class SearchController {}
 * ```
 */
@Injectable()
export class RateLimitGuard implements CanActivate {
  private readonly plans = new WeakMap<object, Map<object, HandlerPlan | null>>();
  private readonly keys: KeyBuilder;
  private readonly hooks: DecisionHooks;
  private readonly logger = new Logger('RateLimit');
  private readonly bounds: UserFunctionBounds;

  constructor(
    @Inject(RATE_LIMIT_OPTIONS) private readonly options: ResolvedRateLimitOptions,
    @Inject(RateLimitStore) private readonly store: RateLimitStore,
    private readonly reflector: Reflector,
    private readonly leases: LeaseKeeper,
    @Inject(RATE_LIMIT_MEMORY_STORE) memory: RateLimitStore,
  ) {
    this.keys = new KeyBuilder(options.keyPrefix);
    this.hooks = new DecisionHooks(options);
    this.bounds = new UserFunctionBounds(options, memory, this.logger);
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const transport = transportFor(context.getType());
    if (transport === undefined) return true;
    const plan = this.planFor(context);
    if (plan === null) return true;
    if (this.hooks.skipIf !== undefined) {
      const skip = this.hooks.skip(context);
      if (skip === true || (skip !== false && (await skip))) return true;
    }

    const bounds = this.bounds;
    const policies =
      plan.policies ??
      (await Promise.all(plan.templates.map((t) => t.resolve(context, bounds, plan.where))));
    const costs =
      plan.costs ??
      (await Promise.all(plan.templates.map((t) => resolveCost(t, context, bounds, plan.where))));
    if (plan.features !== undefined) {
      return this.decideFeatures(context, transport, plan, plan.features, policies, costs);
    }

    let tracker = this.tracker(context, transport, plan);
    if (typeof tracker !== 'string') tracker = await tracker;
    const head = this.keyHead(plan, transport, context) + tracker;
    const keys = new Array<string>(policies.length);
    for (let i = 0; i < keys.length; i++) {
      keys[i] = head + (plan.tails === undefined ? KeyBuilder.tail(policies[i], i) : plan.tails[i]);
    }
    const decision = await this.storeFor(context).consume(keys, policies, costs);
    return this.answer(context, transport, plan, policies, decision);
  }

  /** Who the call counts against, by the module's tracker, as a key part. */
  private tracker(context: ExecutionContext, transport: Transport, plan: HandlerPlan) {
    return moduleTracker(this.options, this.bounds, transport, context, plan.place, plan.where);
  }

  /** The module's store, or what answers for it when a function of the call did not settle. */
  private storeFor(context: ExecutionContext): RateLimitStore {
    return this.bounds.storeFor(context, this.store);
  }

  /** A route with own trackers, outcome counting or shadow policies; see `route-features`. */
  private async decideFeatures(
    context: ExecutionContext,
    transport: Transport,
    plan: HandlerPlan,
    features: RouteFeatures,
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
  ): Promise<boolean> {
    const route = transport.route(context, plan.route, plan.place);
    const keys = features.anyTracker
      ? await featureKeys(
          features,
          context,
          this.keys,
          route,
          () => this.tracker(context, transport, plan),
          policies,
          plan.where,
          this.bounds,
        )
      : await this.plainKeys(context, transport, plan, policies);
    const store = this.storeFor(context);
    const enforce =
      features.maxWaitMs > 0 ? this.waiting(context, transport, features, store) : undefined;
    const { decision, parts } = await decideWithShadow(
      store,
      features,
      keys,
      policies,
      costs,
      enforce,
    );
    if (features.anyCount || features.anyLease) {
      settleOnOutcome(context, store, this.leases, features, parts, decision.allowed);
    }
    if (decision.shadow === true) {
      this.logger.debug(`A shadow policy would have rejected a request to ${route}`);
      if (this.hooks.onLimited !== undefined) this.hooks.limited(context, decision);
    }
    const enforced = parts.find((p) => !p.shadow);
    if (enforced === undefined) {
      if (this.hooks.onDecision !== undefined) this.hooks.decided(context, decision);
      return true;
    }
    return this.answer(context, transport, plan, enforced.policies, decision, enforced.decision);
  }

  /** Decides the enforced policies of a route with `maxWait`: waiting for a slot, up to that long. */
  private waiting(
    context: ExecutionContext,
    transport: Transport,
    features: RouteFeatures,
    store: RateLimitStore,
  ): Enforce {
    const wait: SlotWait = {
      maxWaitMs: features.maxWaitMs,
      onAbandon: (listener) => transport.abandoned?.(context, listener),
      abandoned: () => new HttpException(CLIENT_GONE_MESSAGE, CLIENT_CLOSED_REQUEST),
    };
    return (keys, policies, costs) =>
      waitForSlot(store, this.leases, { keys, policies, costs }, wait);
  }

  private async plainKeys(
    context: ExecutionContext,
    transport: Transport,
    plan: HandlerPlan,
    policies: readonly ResolvedPolicy[],
  ): Promise<string[]> {
    const head =
      this.keyHead(plan, transport, context) + (await this.tracker(context, transport, plan));
    return policies.map((p, i) => head + KeyBuilder.tail(p, i));
  }

  /**
   * Tells the hooks and the client, and lets the call through or turns it away. The hooks see
   * `decision`; the client sees `shown`, the enforced policies' own decision when some are in
   * shadow mode, so that a shadow policy never shows in headers or `Retry-After`.
   */
  private answer(
    context: ExecutionContext,
    transport: Transport,
    plan: HandlerPlan,
    policies: readonly ResolvedPolicy[],
    decision: RateLimitDecision,
    shown: RateLimitDecision = decision,
  ): Promise<boolean> | boolean {
    if (this.hooks.onDecision !== undefined) this.hooks.decided(context, decision);

    if (shown.degraded === 'allow') return true;
    if (shown.degraded === 'deny') {
      const rejection = { reason: 'unavailable', message: STORE_UNAVAILABLE_MESSAGE } as const;
      return this.turnAway(context, transport, { ...rejection, decision: shown }, decision);
    }
    const header =
      shown === decision && plan.policyHeader !== undefined
        ? plan.policyHeader
        : policyHeader(policies);
    transport.report(context, this.options.headers, header, shown);
    if (shown.allowed) return true;
    const never = shown.retryAfterMs === Infinity;
    const message = never ? COST_TOO_HIGH_MESSAGE : this.options.errorMessage;
    return this.turnAway(
      context,
      transport,
      { reason: 'limited', message, decision: shown },
      decision,
    );
  }

  /** `told` is what `onLimited` sees: the same decision `onDecision` saw. */
  private async turnAway(
    context: ExecutionContext,
    transport: Transport,
    rejection: Rejection,
    told: RateLimitDecision,
  ): Promise<never> {
    if (this.hooks.onLimited !== undefined) this.hooks.limited(context, told);
    throw await transport.reject(context, rejection);
  }

  private keyHead(plan: HandlerPlan, transport: Transport, context: ExecutionContext): string {
    const label = transport.route(context, plan.route, plan.place);
    if (label !== plan.routeLabel) {
      plan.keyHead = this.keys.routeHead(label);
      plan.routeLabel = label;
    }
    return plan.keyHead;
  }

  private planFor(context: ExecutionContext): HandlerPlan | null {
    const cls = context.getClass();
    const handler = context.getHandler();
    let byHandler = this.plans.get(cls);
    if (byHandler === undefined) {
      byHandler = new Map();
      this.plans.set(cls, byHandler);
    }
    let plan = byHandler.get(handler);
    if (plan === undefined) {
      plan = this.compile(cls, handler);
      byHandler.set(handler, plan);
    }
    return plan;
  }

  /** Method-level metadata wins over class-level; `@SkipRateLimit` wins at its own level. */
  private compile(cls: object, handler: object): HandlerPlan | null {
    const get = <T>(key: symbol, target: object) =>
      this.reflector.get<T | undefined>(key, target as never);
    if (get<boolean>(RATE_LIMIT_SKIP, handler)) return null;
    let templates = get<PolicyTemplate[]>(RATE_LIMIT_POLICY, handler);
    if (templates === undefined) {
      if (get<boolean>(RATE_LIMIT_SKIP, cls)) return null;
      templates = get<PolicyTemplate[]>(RATE_LIMIT_POLICY, cls);
    }
    if (templates === undefined) return null;

    const fixed = templates.every((t) => t.fixed !== undefined)
      ? templates.map((t) => t.fixed!)
      : undefined;
    const costs = templates.every((t) => typeof t.cost === 'number')
      ? templates.map((t) => t.cost as number)
      : undefined;
    const place = placeName(
      (cls as { prototype: object }).prototype,
      (handler as { name: string }).name,
    );
    return {
      templates,
      place,
      where: `@RateLimit on ${place}`,
      policies: fixed,
      tails: fixed?.map((p, i) => KeyBuilder.tail(p, i)),
      policyHeader: fixed && policyHeader(fixed),
      costs,
      route: newRouteMemo(),
      routeLabel: undefined,
      keyHead: '',
      features: routeFeatures(templates, this.options.shadow),
    };
  }
}

// nginx's status for a client that closed the connection before the answer; never seen by it.
const CLIENT_CLOSED_REQUEST = 499;
const CLIENT_GONE_MESSAGE = 'The client went away while waiting for a slot';

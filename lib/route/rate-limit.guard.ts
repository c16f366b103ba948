import {
  type CanActivate,
  type ExecutionContext,
  Inject,
  Injectable,
  Logger,
  Optional,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { LeaseKeeper } from '../flow/lease-keeper.js';
import { type ResolvedRateLimitOptions } from '../options/rate-limit.options.js';
import {
  RATE_LIMIT_CALL_STORE,
  RATE_LIMIT_OPTIONS,
  RATE_LIMIT_TELEMETRY,
} from '../rate-limit.constants.js';
import { type CallStore, type Limits } from '../store-contract/store-call.js';
import { type RateLimitDecision } from '../store-contract/store.interface.js';
import { PendingOutcomes } from '../transports/pending-outcomes.js';
import { transportFor } from '../transports/index.js';
import { DecisionHooks } from './decision-hooks.js';
import { RequestLimits } from './request-limits.js';
import { RouteAnswer } from './route-answer.js';
import { decideRoute } from './route-decision.js';
import { type RouteCall, type RouteFeatures, RoutePlans } from './route-plan.js';
import { Settlement } from './settlement.js';
import { UserFunctionBounds } from '../templates/user-functions.js';
import { OverrideRegistry } from '../overrides/override-registry.js';
import { DecisionFeed } from '../activity/decision-feed.js';
import { NO_TELEMETRY, type RateLimitTelemetry } from '../telemetry/rate-limit-telemetry.js';

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
  private readonly plans: RoutePlans;
  private readonly hooks: DecisionHooks;
  private readonly bounds: UserFunctionBounds;
  private readonly limits: RequestLimits;
  private readonly answer: RouteAnswer;
  private readonly settlement: Settlement;

  constructor(
    @Inject(RATE_LIMIT_OPTIONS) options: ResolvedRateLimitOptions,
    @Inject(RATE_LIMIT_CALL_STORE) private readonly store: CallStore,
    reflector: Reflector,
    private readonly leases: LeaseKeeper,
    pending: PendingOutcomes,
    overrides: OverrideRegistry,
    private readonly feed: DecisionFeed,
    @Optional()
    @Inject(RATE_LIMIT_TELEMETRY)
    private readonly telemetry: RateLimitTelemetry = NO_TELEMETRY,
  ) {
    this.plans = new RoutePlans(reflector, options.shadow);
    this.hooks = new DecisionHooks(options);
    const logger = new Logger('RateLimit');
    this.bounds = new UserFunctionBounds(options, logger);
    this.limits = new RequestLimits(options, this.bounds, logger, overrides);
    this.answer = new RouteAnswer(this.hooks, options.headers, options.errorMessage);
    this.settlement = new Settlement(leases, pending);
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const transport = transportFor(context.getType());
    if (transport === undefined) return true;
    const plan = this.plans.planFor(context.getClass(), context.getHandler());
    if (plan === null) return true;
    if (this.hooks.skipIf !== undefined) {
      const skip = this.hooks.skip(context);
      if (skip === true || (skip !== false && (await skip))) return true;
    }
    const call: RouteCall = { context, transport, plan };
    const limits = this.bounds.marked(context, await this.limits.of(call));
    if (plan.features === undefined) {
      const decision = await this.store.execute({ op: 'consume', limits });
      if (this.telemetry.enabled) this.count(call, decision, false);
      if (this.feed.active) this.feed.decided(this.route(call), limits, decision, decision);
      return this.answer.answer(call, limits.policies, decision);
    }
    return this.decideWithFeatures(call, plan.features, limits);
  }

  /** Own trackers, outcome counting, shadow policies, waiting or leases. */
  private async decideWithFeatures(
    call: RouteCall,
    features: RouteFeatures,
    limits: Limits,
  ): Promise<boolean> {
    const store = this.store;
    const { decision, parts, enforced, waited } = await decideRoute(
      call,
      features,
      limits,
      store,
      this.leases,
      this.telemetry,
    );
    if (this.telemetry.enabled) this.count(call, decision, waited);
    if (features.anyCount || features.anyLease || features.anySettle) {
      this.settlement.settle(call, features, store, parts, decision.allowed);
    }
    if (this.feed.active) {
      const shown = enforced?.decision ?? decision;
      const { trackers, shadow } = features;
      this.feed.decided(this.route(call), limits, decision, shown, trackers, shadow);
    }
    if (decision.shadow === true) this.answer.shadowLimited(call, decision);
    if (enforced === undefined) return this.answer.passedUnenforced(call, decision);
    return this.answer.answer(call, enforced.policies, decision, enforced.decision);
  }

  /** Tells the telemetry of the call's decision, under the transport's label for its route. */
  private count(call: RouteCall, decision: RateLimitDecision, waited: boolean) {
    this.telemetry.decided(this.route(call), decision, waited, 'attributes');
  }

  /** The transport's label for the call's route. */
  private route({ context, transport, plan }: RouteCall): string {
    return transport.route(context, plan.route, plan.place);
  }
}

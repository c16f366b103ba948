import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { policyHeader, writeRateLimitHeaders } from './http/headers.js';
import {
  type HttpRequestLike,
  type HttpResponseLike,
  routeMethod,
  routePattern,
} from './http/request.js';
import { encodeKeyPart, KeyBuilder, policySuffix } from './keys/key-builder.js';
import { defaultTracker } from './keys/tracker.js';
import { RATE_LIMIT_OPTIONS, RATE_LIMIT_POLICY, RATE_LIMIT_SKIP } from './rate-limit.constants.js';
import { placeName } from './rate-limit.decorator.js';
import { RateLimitException } from './rate-limit.exception.js';
import { type ResolvedRateLimitOptions } from './rate-limit.options.js';
import { type ResolvedPolicy } from './rate-limit.policy.js';
import { RateLimitStore } from './stores/store.interface.js';

/** Everything about one handler the guard needs per request, worked out on its first request. */
interface HandlerPlan {
  readonly policy: ResolvedPolicy;
  readonly policyHeader: string;
  readonly suffix: string;
  readonly place: string;
  // The key's constant parts for the route seen last; a handler almost always has one route.
  method: string;
  pattern: string | undefined;
  keyHead: string;
  keyTail: string;
}

/**
 * Applies `@RateLimit` policies. Registered globally by default; with `globalGuard: false`,
 * attach it yourself.
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

  constructor(
    @Inject(RATE_LIMIT_OPTIONS) private readonly options: ResolvedRateLimitOptions,
    @Inject(RateLimitStore) private readonly store: RateLimitStore,
    private readonly reflector: Reflector,
  ) {
    this.keys = new KeyBuilder(options.keyPrefix);
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    // WebSocket, RPC and GraphQL contexts carry no HTTP request; they pass untouched.
    if (context.getType() !== 'http') return true;
    const plan = this.planFor(context);
    if (plan === null) return true;

    const http = context.switchToHttp();
    const req = http.getRequest<HttpRequestLike>();
    const tracker =
      this.options.getTracker === undefined
        ? defaultTracker(req, this.options.ipv6Subnet)
        : checkTracker(await this.options.getTracker(context), plan.place);
    const decision = await this.store.consume(this.keyFor(plan, req, tracker), plan.policy, 1);

    writeRateLimitHeaders(
      http.getResponse<HttpResponseLike>(),
      this.options.headers,
      plan.policy,
      plan.policyHeader,
      decision,
    );
    if (!decision.allowed) throw new RateLimitException(this.options.errorMessage, decision);
    return true;
  }

  private keyFor(plan: HandlerPlan, req: HttpRequestLike, tracker: string): string {
    const method = routeMethod(req);
    const pattern = routePattern(req);
    if (method !== plan.method || pattern !== plan.pattern) {
      const route = `${method} ${pattern ?? plan.place}`;
      [plan.keyHead, plan.keyTail] = this.keys.routeParts(route, plan.suffix);
      plan.method = method;
      plan.pattern = pattern;
    }
    return plan.keyHead + encodeKeyPart(tracker) + plan.keyTail;
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
    let policy: ResolvedPolicy | undefined;
    if (get<boolean>(RATE_LIMIT_SKIP, handler)) return null;
    policy = get<ResolvedPolicy>(RATE_LIMIT_POLICY, handler);
    if (policy === undefined) {
      if (get<boolean>(RATE_LIMIT_SKIP, cls)) return null;
      policy = get<ResolvedPolicy>(RATE_LIMIT_POLICY, cls);
    }
    if (policy === undefined) return null;
    const place = placeName(
      (cls as { prototype: object }).prototype,
      (handler as { name: string }).name,
    );
    return {
      policy,
      policyHeader: policyHeader(policy),
      suffix: policySuffix(policy),
      place,
      method: '',
      pattern: undefined,
      keyHead: '',
      keyTail: '',
    };
  }
}

function checkTracker(tracker: unknown, place: string): string {
  if (typeof tracker === 'string' && tracker !== '') return tracker;
  if (typeof tracker === 'number' && Number.isFinite(tracker)) return String(tracker);
  throw new TypeError(
    `RateLimitModule getTracker must return a non-empty string; it returned ${String(tracker)} for ${place}`,
  );
}

import { type ExecutionContext } from '@nestjs/common';
import { type Reflector } from '@nestjs/core';
import { anyHoldsLeases } from '../algorithms/registry.js';
import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import { RATE_LIMIT_POLICY, RATE_LIMIT_SKIP } from '../rate-limit.constants.js';
import { CalendarPolicyHeader, followsCalendar, policyHeader } from '../transports/http-headers.js';
import { newRouteMemo, type RouteMemo, type Transport } from '../transports/transport.js';
import { type PolicyTemplate } from '../templates/policy-template.js';
import { type CountMode } from '../templates/route-policy.js';
import { placeName } from './rate-limit.decorator.js';
import { RouteKeys } from '../keys/route-keys.js';
import { scopeMark } from '../templates/route-scope.js';

/**
 * The keys of a route where some policy shares its budget beyond the route, compiled once per
 * handler: see {@link RouteKeys.scopedHead}.
 */
export interface RouteScopes {
  /** Per policy, where its budget lives (`scopeMark`); undefined for one counted per route. */
  readonly marks: ReadonlyArray<string | undefined>;
  /** Per shared policy, what follows the key head, when the policies are fixed. */
  readonly tails: ReadonlyArray<string | undefined> | undefined;
  /** The route's part of its per-route keys, built for `label`, kept while the label stays. */
  readonly route: { label: string | undefined; value: string };
}

/**
 * What a route uses beyond "count every request of the module's tracker per route, enforced":
 * policies with their own tracker, shared scopes, counting only some outcomes, shadow mode,
 * waiting, or leases. A route that uses none has no features, and takes none of their steps.
 */
export interface RouteFeatures {
  readonly trackers: ReadonlyArray<PolicyTemplate['tracker']>;
  readonly anyTracker: boolean;
  /** Several policies, some with their own tracker: their keys share the route as hash tag. */
  readonly routeTag: boolean;
  /** Some policy shares its budget beyond the route: every key is built by its tracker first. */
  readonly scopes: RouteScopes | undefined;
  readonly shadow: readonly boolean[];
  readonly anyShadow: boolean;
  readonly counts: readonly CountMode[];
  readonly anyCount: boolean;
  /** The longest `maxWait` among the enforced policies; 0 when the route never waits. */
  readonly maxWaitMs: number;
  /**
   * How long a request may wait when only requests still in flight, whose outcome some enforced
   * policy waits for to count them, make it rejected: `maxWaitMs` when set, else
   * {@link OUTCOME_WAIT_MS}; 0 when no enforced policy counts only some outcomes.
   */
  readonly outcomeWaitMs: number;
  /** Some policy holds a lease until the call ends (`'concurrency'`). */
  readonly anyLease: boolean;
  /** Each policy's `settle`, by its index; undefined where it has none. */
  readonly settles: ReadonlyArray<PolicyTemplate['settle']>;
  /** Some policy settles what a request used once it ends. */
  readonly anySettle: boolean;
}

/**
 * The longest a request waits, on a route without `maxWait`, for the outcomes of requests in flight
 * that alone fill a policy counting only some outcomes. Their answers are usually milliseconds
 * away (parallel tabs, a mobile client's retry); past this, it is rejected, still without a
 * lock-out.
 */
export const OUTCOME_WAIT_MS = 2000;

/**
 * Everything about one handler that does not change from one request to the next, compiled on
 * its first request. Per-request work is only what depends on the request.
 */
export interface RoutePlan {
  readonly templates: readonly PolicyTemplate[];
  /** `Class.method`, the route's stand-in name where a transport knows no route. */
  readonly place: string;
  /** `@RateLimit on <place>`, for errors and warnings. */
  readonly where: string;
  /** Present when no policy value depends on the request: then nothing is resolved per request. */
  readonly policies: readonly ResolvedPolicy[] | undefined;
  /** Present when every cost is a plain number. */
  readonly costs: readonly number[] | undefined;
  /** What follows the tracker in each key, when the policies are fixed. */
  readonly tails: readonly string[] | undefined;
  /** The `RateLimit-Policy` value when the policies are fixed; by the window for calendar ones. */
  readonly policyHeader: string | CalendarPolicyHeader | undefined;
  /** The transport's label for the route seen last; a handler almost always has one route. */
  readonly route: RouteMemo;
  /** The key head built for `route.label`, kept while the label stays the same string. */
  readonly head: { label: string | undefined; value: string };
  /** Undefined for a plain route: one enforced call, the module's tracker, nothing after. */
  readonly features: RouteFeatures | undefined;
  /** Warnings given for the route already, each given once. */
  readonly warned: { authOrder: boolean };
}

/** The plans of every handler, compiled on first use. `null`: the handler is not limited. */
export class RoutePlans {
  private readonly byClass = new WeakMap<object, Map<object, RoutePlan | null>>();

  constructor(
    private readonly reflector: Reflector,
    private readonly shadowAll: boolean,
  ) {}

  planFor(cls: object, handler: object): RoutePlan | null {
    let byHandler = this.byClass.get(cls);
    if (byHandler === undefined) {
      byHandler = new Map();
      this.byClass.set(cls, byHandler);
    }
    let plan = byHandler.get(handler);
    if (plan === undefined) {
      plan = this.compile(cls, handler);
      byHandler.set(handler, plan);
    }
    return plan;
  }

  /** Method-level metadata wins over class-level; `@SkipRateLimit` wins at its own level. */
  private compile(cls: object, handler: object): RoutePlan | null {
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
      costs,
      tails: fixed?.map((p, i) => RouteKeys.tail(p, i)),
      policyHeader:
        fixed && (followsCalendar(fixed) ? new CalendarPolicyHeader(fixed) : policyHeader(fixed)),
      route: newRouteMemo(),
      head: { label: undefined, value: '' },
      features: routeFeatures(
        templates,
        this.shadowAll,
        routeScopes(templates, fixed, (cls as { name?: string }).name ?? ''),
      ),
      warned: { authOrder: false },
    };
  }
}

/** The features of a handler's templates, or undefined when it uses none. */
function routeFeatures(
  templates: readonly PolicyTemplate[],
  shadowAll: boolean,
  scopes: RouteScopes | undefined,
): RouteFeatures | undefined {
  const trackers = templates.map((t) => t.tracker);
  const shadow = templates.map((t) => shadowAll || t.shadow);
  const counts = templates.map((t) => t.count);
  const anyTracker = trackers.some((t) => t !== undefined);
  const anyShadow = shadow.some(Boolean);
  const anyCount = counts.some((c) => c !== 'all');
  let maxWaitMs = 0;
  templates.forEach((t, i) => {
    if (!shadow[i]) maxWaitMs = Math.max(maxWaitMs, t.maxWaitMs);
  });
  const countsEnforced = counts.some((c, i) => c !== 'all' && !shadow[i]);
  const outcomeWaitMs = countsEnforced ? maxWaitMs || OUTCOME_WAIT_MS : 0;
  const anyLease = anyHoldsLeases(templates);
  const settles = templates.map((t) => t.settle);
  const anySettle = settles.some((s) => s !== undefined);
  if (
    !anyTracker &&
    !anyShadow &&
    !anyCount &&
    maxWaitMs === 0 &&
    !anyLease &&
    !scopes &&
    !anySettle
  )
    return undefined;
  return {
    trackers,
    anyTracker,
    routeTag: anyTracker && templates.length > 1,
    scopes,
    shadow,
    anyShadow,
    counts,
    anyCount,
    maxWaitMs,
    outcomeWaitMs,
    anyLease,
    settles,
    anySettle,
  };
}

/** The scoped keys of a handler's templates, or undefined when every policy counts per route. */
function routeScopes(
  templates: readonly PolicyTemplate[],
  fixed: readonly ResolvedPolicy[] | undefined,
  controller: string,
): RouteScopes | undefined {
  if (templates.every((t) => t.scope === 'route')) return undefined;
  const marks = templates.map((t) => scopeMark(t.scope, controller));
  return {
    marks,
    tails: fixed?.map((p, i) => {
      const mark = marks[i];
      return mark === undefined ? undefined : RouteKeys.sharedTail(mark, p);
    }),
    route: { label: undefined, value: '' },
  };
}

/** One call to a limited handler, as the guard's steps see it. */
export interface RouteCall {
  readonly context: ExecutionContext;
  readonly transport: Transport;
  readonly plan: RoutePlan;
}

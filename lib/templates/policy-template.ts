import { algorithmOf } from '../algorithms/registry.js';
import { type ExecutionContext } from '@nestjs/common';
import { type Algorithm } from '../algorithms/algorithm.js';
import {
  checkAlgorithm,
  checkShape,
  type DynamicResult,
  MAX_POLICIES,
  type RateLimitPolicy,
  type ResolvedPolicy,
  resolveBlock,
  resolvePolicy,
} from '../policy/rate-limit.policy.js';
import { checkCount, checkName, configError } from '../policy/validation.js';
import { checkFields, knownFields } from '../policy/known-fields.js';
import { checkRouteFields } from './route-fields.js';
import { callUserFunction, EXPIRED, type Expired, type FunctionBound } from './user-functions.js';

import {
  type CountMode,
  ROUTE_POLICY_FIELDS,
  type RoutePolicy,
  type RouteScope,
} from './route-policy.js';

const ROUTE_FIELDS = knownFields(ROUTE_POLICY_FIELDS);

/**
 * A declared policy, checked when it was declared. `fixed` holds the resolved policy when period
 * and threshold are plain values; otherwise `resolve` works it out per request.
 */
export interface PolicyTemplate {
  readonly fixed: ResolvedPolicy | undefined;
  /** The policy's own tracker, if it has one. */
  readonly tracker: RoutePolicy['tracker'];
  readonly count: CountMode;
  readonly shadow: boolean;
  /** Which routes share the budget: `'route'` unless the policy says otherwise. */
  readonly scope: RouteScope;
  /** What the request really used, charged in place of its cost once it succeeded. */
  readonly settle: RoutePolicy['settle'];
  readonly algorithm: Algorithm;
  /** How long a request may wait for a slot; 0 for none. */
  readonly maxWaitMs: number;
  /** The name, when known before any request: given, or derived from fixed values. */
  readonly name: string | undefined;
  readonly cost: number | ((context: ExecutionContext) => DynamicResult<number>);
  readonly where: string;
  /**
   * The policy for this request. A `period` or `threshold` function that returns a promise is
   * awaited through `bound`; one that does not settle in time counts as returning nothing.
   * `route` names the handler in what `bound` reports.
   */
  resolve(
    context: ExecutionContext,
    bound: FunctionBound,
    route: string,
  ): ResolvedPolicy | Promise<ResolvedPolicy>;
}

/** A request's cost when the policy gives none, or its function returns nothing. */
export const DEFAULT_COST = 1;

// Per-plan limits take few distinct values; the bound only stops a pathological function.
const MAX_CACHED_VARIANTS = 1000;

/** Checks one or several declared policies and turns them into templates. */
export function compileTemplates(
  input: RoutePolicy | readonly RoutePolicy[] | undefined,
  where: string,
): PolicyTemplate[] {
  const list = Array.isArray(input) ? input : [input];
  if (list.length === 0) throw configError(where, 'policies', input, 'at least one policy');
  return checkRoutePolicies(
    list.map((policy) => compileTemplate(policy, where)),
    where,
  );
}

/** Adds templates to those already declared (stacked decorators), checking them together. */
export function appendTemplates(
  existing: readonly PolicyTemplate[],
  added: readonly PolicyTemplate[],
  where: string,
): PolicyTemplate[] {
  return checkRoutePolicies([...added, ...existing], where);
}

/** The rules a route's policies keep together: how many, unique names, and scopes. */
function checkRoutePolicies(templates: PolicyTemplate[], where: string): PolicyTemplate[] {
  if (templates.length > MAX_POLICIES) {
    throw configError(
      where,
      'policies',
      `${templates.length} of them`,
      `at most ${MAX_POLICIES} per route`,
    );
  }
  // Names label the policies in the headers, so they must tell them apart. A dynamic policy
  // without a name is named per request; its key is still its own through its position.
  const names = new Set<string>();
  for (const { name } of templates) {
    if (name === undefined) continue;
    if (names.has(name))
      throw configError(where, 'name', name, 'unique among the policies of a route');
    names.add(name);
  }
  checkScopedRoute(templates, where);
  return templates;
}

/**
 * What a route's policies must agree on once one of them shares its budget beyond the route.
 * Every key of one decision takes the tracker as its Redis Cluster hash tag, so that the shared
 * key is the same whichever route uses it and still sits in one slot with the route's others:
 * the policies must count the same tracker. And a shared key has no position in it, so two
 * policies of a route in the same scope are told apart by their names alone.
 */
function checkScopedRoute(templates: readonly PolicyTemplate[], where: string): void {
  const shared = templates.find((t) => t.scope !== 'route');
  if (shared === undefined) return;
  if (templates.some((t) => t.tracker !== shared.tracker)) {
    throw configError(
      where,
      'scope',
      shared.scope,
      "'route' (or omitted) unless every policy of the route counts the same tracker: the " +
        "module's, or one tracker function they all share",
    );
  }
  for (const t of templates) {
    if (t.scope === 'route' || t.name !== undefined) continue;
    if (templates.some((other) => other !== t && other.scope === t.scope)) {
      throw configError(
        where,
        'name',
        t.name,
        `given on each policy that shares scope ${JSON.stringify(t.scope)} with another on the route`,
      );
    }
  }
}

function compileTemplate(routePolicy: RoutePolicy | undefined, where: string): PolicyTemplate {
  checkShape(routePolicy, where);
  if (routePolicy !== undefined) checkFields(routePolicy, ROUTE_FIELDS, where);
  const route = checkRouteFields(routePolicy, where);
  // The route-only fields are checked; what follows is the policy proper.
  const policy: RateLimitPolicy<unknown> = routePolicy ?? {};
  const { period, threshold, anchor, cost = DEFAULT_COST, name } = policy;
  const costValue = typeof cost === 'function' ? cost : checkCount(cost, 'cost', where);
  // Check now what does not depend on the request, so mistakes surface at startup.
  const algorithm = checkAlgorithm(policy, where);
  if (algorithmOf(algorithm).holdsLeases && route.count !== 'all') {
    throw configError(
      where,
      'count',
      route.count,
      `omitted for ${algorithm} (a lease is freed whatever the outcome)`,
    );
  }
  if (
    typeof period !== 'function' &&
    typeof threshold !== 'function' &&
    typeof anchor !== 'function'
  ) {
    const fixed = resolvePolicy(policy, where);
    return {
      ...route,
      algorithm,
      fixed,
      name: fixed.name,
      cost: costValue,
      where,
      resolve: () => fixed,
    };
  }
  if (name !== undefined) checkName(name, where);
  if (typeof period !== 'function' && period !== undefined && policy.calendar === undefined) {
    resolvePolicy({ period }, where);
  }
  if (policy.calendar !== undefined || policy.timeZone !== undefined) {
    // Everything of a calendar window but a function's value, checked at startup.
    const { calendar, timeZone } = policy;
    const given = (v: unknown) => (typeof v === 'function' ? undefined : v);
    resolvePolicy(
      {
        algorithm,
        calendar,
        timeZone,
        anchor: given(anchor) as never,
        period: given(period) as never,
      },
      where,
    );
  } else if (anchor !== undefined) {
    throw configError(where, 'anchor', 'a function', 'given only with calendar');
  }
  resolveBlock(policy.blockDuration, where);
  if (policy.burst !== undefined)
    resolvePolicy({ algorithm, burst: policy.burst, threshold: policy.burst }, where);
  const variants = new Map<string, ResolvedPolicy>();
  const resolveWith = (periodValue: unknown, thresholdValue: unknown, anchorValue: unknown) => {
    const cacheKey = `${typeof periodValue}:${String(periodValue)}|${typeof thresholdValue}:${String(thresholdValue)}|${anchorKey(anchorValue)}`;
    let resolved = variants.get(cacheKey);
    if (resolved === undefined) {
      resolved = resolvePolicy(
        {
          ...policy,
          period: periodValue as never,
          threshold: thresholdValue as never,
          anchor: anchorValue as never,
        },
        where,
      );
      if (variants.size >= MAX_CACHED_VARIANTS) variants.clear();
      variants.set(cacheKey, resolved);
    }
    return resolved;
  };
  return {
    ...route,
    algorithm,
    fixed: undefined,
    name,
    cost: costValue,
    where,
    resolve(context, bound, route) {
      let p: unknown =
        typeof period === 'function' ? callUserFunction(period, 'period', context, route) : period;
      let t: unknown =
        typeof threshold === 'function'
          ? callUserFunction(threshold, 'threshold', context, route)
          : threshold;
      let a: unknown =
        typeof anchor === 'function' ? callUserFunction(anchor, 'anchor', context, route) : anchor;
      if (!isPromise(p) && !isPromise(t) && !isPromise(a)) return resolveWith(p, t, a);
      if (isPromise(p)) p = settled(bound.settle(p, 'period', context, route));
      if (isPromise(t)) t = settled(bound.settle(t, 'threshold', context, route));
      if (isPromise(a)) a = settled(bound.settle(a, 'anchor', context, route));
      return Promise.all([p, t, a]).then(([pv, tv, av]) => resolveWith(pv, tv, av));
    },
  };
}

/**
 * The cost of one request under a template, checked: a positive integer, or 1 when the function
 * returns nothing (as a missing `threshold` or `period` means the default). A promise is awaited
 * through `bound`; one that does not settle in time counts as returning nothing.
 */
export function resolveCost(
  template: PolicyTemplate,
  context: ExecutionContext,
  bound: FunctionBound,
  route: string,
): number | Promise<number> {
  const { cost, where } = template;
  if (typeof cost === 'number') return cost;
  const value: unknown = callUserFunction(cost, 'cost', context, route);
  return isPromise(value)
    ? settled(bound.settle(value, 'cost', context, route)).then((v) => checkCost(v, where))
    : checkCost(value, where);
}

function checkCost(value: unknown, where: string): number {
  return value === undefined ? DEFAULT_COST : checkCount(value, 'cost', where);
}

/** A bounded value, undefined when its function did not settle in time: the default stands in. */
function settled<T>(value: Promise<T | Expired>): Promise<T | undefined> {
  return value.then((v) => (v === EXPIRED ? undefined : v));
}

/** An anchor as a variant's cache key: a `Date` by its time, which `String` would round. */
function anchorKey(value: unknown): string {
  return value instanceof Date ? `d${value.getTime()}` : `${typeof value}:${String(value)}`;
}

export function isPromise(value: unknown): value is Promise<unknown> {
  return typeof (value as Promise<unknown> | undefined)?.then === 'function';
}

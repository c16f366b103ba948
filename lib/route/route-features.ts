import { type ExecutionContext, Logger } from '@nestjs/common';
import { type HeldLease, type LeaseKeeper } from '../flow/lease-keeper.js';
import { encodeKeyPart, KeyBuilder } from './route-keys.js';
import { type CountMode, isPromise, type PolicyTemplate } from './policy-template.js';
import { watchOutcome } from './rate-limit.interceptor.js';
import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import { EXPIRED, type FunctionBound } from './user-functions.js';
import { combineDecisions } from '../stores/decision.js';
import { execute } from '../stores/store-call.js';
import {
  type PolicyDecision,
  type RateLimitDecision,
  type RateLimitStore,
} from '../stores/store.interface.js';

/**
 * What a route uses beyond "count every request of the module's tracker, enforced": policies with
 * their own tracker, counting only some outcomes, or in shadow mode. Worked out once per handler;
 * a route that uses none has no features and takes none of these steps.
 */
export interface RouteFeatures {
  readonly trackers: ReadonlyArray<PolicyTemplate['tracker']>;
  readonly anyTracker: boolean;
  /** Several policies, some with their own tracker: their keys share the route as hash tag. */
  readonly routeTag: boolean;
  readonly shadow: readonly boolean[];
  readonly anyShadow: boolean;
  readonly counts: readonly CountMode[];
  readonly anyCount: boolean;
  /** The longest `maxWait` among the enforced policies; 0 when the route never waits. */
  readonly maxWaitMs: number;
  /** Some policy is a concurrency limit: its lease is held until the call ends. */
  readonly anyLease: boolean;
}

/** The features of a handler's templates, or undefined when it uses none. */
export function routeFeatures(
  templates: readonly PolicyTemplate[],
  shadowAll: boolean,
): RouteFeatures | undefined {
  const trackers = templates.map((t) => t.tracker);
  const shadow = templates.map((t) => shadowAll || t.shadow);
  const counts = templates.map((t) => t.count);
  const anyTracker = trackers.some((t) => t !== undefined);
  const anyShadow = shadow.some(Boolean);
  const anyCount = counts.some((c) => c !== 'all');
  let maxWaitMs = 0;
  templates.forEach(
    (t, i) => (maxWaitMs = shadow[i] ? maxWaitMs : Math.max(maxWaitMs, t.maxWaitMs)),
  );
  const anyLease = templates.some((t) => t.algorithm === 'concurrency');
  if (!anyTracker && !anyShadow && !anyCount && maxWaitMs === 0 && !anyLease) return undefined;
  const routeTag = anyTracker && templates.length > 1;
  return {
    trackers,
    anyTracker,
    routeTag,
    shadow,
    anyShadow,
    counts,
    anyCount,
    maxWaitMs,
    anyLease,
  };
}

/** How the enforced policies of a route are decided: at once, or waiting for a slot. */
export type Enforce = (
  keys: readonly string[],
  policies: readonly ResolvedPolicy[],
  costs: readonly number[],
) => Promise<RateLimitDecision>;

// Kept apart from the module's trackers (`user:…`, `ip:…`), so that a policy's value, say a
// username, can never name another caller's bucket.
const POLICY_TRACKER_MARK = '~';

/**
 * The keys of a route whose policies have trackers of their own. `moduleTracker` gives the
 * module's tracker as a key part, already encoded; with `routeTag`, keys read
 * `<prefix>:{<route>}|<tracker>:<i>:<id>`. A policy tracker's promise is awaited through `bound`;
 * one that does not settle in time counts as returning nothing: the module's tracker then.
 */
export async function featureKeys(
  features: RouteFeatures,
  context: ExecutionContext,
  keys: KeyBuilder,
  route: string,
  moduleTracker: () => string | Promise<string>,
  policies: readonly ResolvedPolicy[],
  where: string,
  bound: FunctionBound,
): Promise<string[]> {
  const out = new Array<string>(policies.length);
  let fallback: string | undefined;
  for (let i = 0; i < policies.length; i++) {
    const own = features.trackers[i];
    let part: string | undefined;
    if (own !== undefined) {
      let value: unknown = own(context);
      if (isPromise(value)) value = await bound.settle(value, 'tracker', context, where);
      part = policyTracker(value === EXPIRED ? undefined : value, where);
    }
    part ??= fallback ??= await moduleTracker();
    out[i] = features.routeTag
      ? `${keys.routeTagHead(route)}${part}${KeyBuilder.tagTail(policies[i], i)}`
      : `${keys.routeHead(route)}${part}${KeyBuilder.tail(policies[i], i)}`;
  }
  return out;
}

/** A policy tracker's value, marked and encoded; undefined (the module's tracker then) when empty. */
function policyTracker(value: unknown, where: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value === 'string') return encodeKeyPart(POLICY_TRACKER_MARK + value);
  if (typeof value === 'number' && Number.isFinite(value)) {
    return encodeKeyPart(POLICY_TRACKER_MARK + value);
  }
  throw new TypeError(
    `${where}: tracker must return a string (or nothing); it returned ${typeof value}`,
  );
}

/**
 * Decides a route with shadow policies: the enforced and the shadow ones in two calls, each all
 * or nothing on its own. The request is allowed when the enforced ones allow it; the decision
 * lists every policy, and says `shadow: true` when only shadow policies rejected it.
 */
export async function decideWithShadow(
  store: RateLimitStore,
  features: RouteFeatures,
  keys: readonly string[],
  policies: readonly ResolvedPolicy[],
  costs: readonly number[],
  enforce: Enforce = (k, p, c) => store.consume(k, p, c),
): Promise<{ decision: RateLimitDecision; parts: DecisionPart[] }> {
  const parts = splitByShadow(features, keys, policies, costs);
  const decided = await Promise.all(
    parts.map((p) =>
      p.shadow ? store.consume(p.keys, p.policies, p.costs) : enforce(p.keys, p.policies, p.costs),
    ),
  );
  parts.forEach((part, n) => (part.decision = decided[n]));
  // No shadow policy: the one call's decision is the route's, as it is.
  if (parts.length === 1 && !parts[0].shadow) return { decision: decided[0], parts };
  const byPolicy: PolicyDecision[] = new Array(policies.length);
  decided.forEach((d, n) => parts[n].indexes.forEach((i, j) => (byPolicy[i] = d.policies[j])));
  const enforced = parts.find((p) => !p.shadow)?.decision;
  const allowed = enforced?.allowed ?? true;
  const merged = combineDecisions(allowed, byPolicy);
  const shadowRejected = parts.some((p) => p.shadow && !p.decision!.allowed);
  const degraded = decided.find((d) => d.degraded !== undefined)?.degraded;
  const decision: RateLimitDecision = {
    ...merged,
    ...(degraded === undefined ? {} : { degraded }),
    ...(allowed && shadowRejected ? { shadow: true } : {}),
  };
  return { decision, parts };
}

/** One store call of a decision: some of the route's policies. */
export interface DecisionPart {
  readonly shadow: boolean;
  readonly indexes: number[];
  readonly keys: string[];
  readonly policies: ResolvedPolicy[];
  readonly costs: number[];
  decision?: RateLimitDecision;
}

function splitByShadow(
  features: RouteFeatures,
  keys: readonly string[],
  policies: readonly ResolvedPolicy[],
  costs: readonly number[],
): DecisionPart[] {
  const parts: DecisionPart[] = [];
  for (const shadow of [false, true]) {
    const indexes = policies.map((_, i) => i).filter((i) => features.shadow[i] === shadow);
    if (indexes.length === 0) continue;
    parts.push({
      shadow,
      indexes,
      keys: indexes.map((i) => keys[i]),
      policies: indexes.map((i) => policies[i]),
      costs: indexes.map((i) => costs[i]),
    });
  }
  return parts;
}

const logger = new Logger('RateLimit');
let refundFailures = 0;

/**
 * Holds the concurrency leases the decision took until the call ends, and once the request's
 * outcome is known, frees them and gives back what the policies that do not count it have
 * counted: `'failures'` policies on success, `'successes'` policies on failure. Only parts the
 * store allowed counted anything. A call turned away frees its leases at once. A refund that
 * fails is logged (the first few), never thrown.
 */
export function settleOnOutcome(
  context: ExecutionContext,
  store: RateLimitStore,
  leases: LeaseKeeper,
  features: RouteFeatures,
  parts: readonly DecisionPart[],
  admitted: boolean,
): void {
  let held: HeldLease[] | undefined;
  let unclaimed = () => false;
  if (features.anyLease) {
    for (const part of parts) {
      if (!part.decision!.allowed) continue;
      const lease = leases.hold(part, part.decision!, () => unclaimed());
      if (lease === undefined) continue;
      if (admitted) (held ??= []).push(lease);
      else void leases.release(lease);
    }
  }
  if (!features.anyCount && held === undefined) return;
  unclaimed = watchOutcome(context, (succeeded) => {
    if (held !== undefined) for (const lease of held) void leases.release(lease);
    if (!features.anyCount) return;
    for (const part of parts) {
      const decision = part.decision!;
      if (!decision.allowed) continue;
      // The whole key set, as counted (the block cache knows it by that set); a policy that
      // counts this outcome gets 0 back.
      const costs = part.indexes.map((i, j) =>
        givesBack(features.counts[i], succeeded) ? part.costs[j] : 0,
      );
      if (costs.every((c) => c === 0)) continue;
      const limits = { keys: part.keys, policies: part.policies, costs };
      execute(store, { op: 'refund', limits, of: decision }).catch((error: unknown) => {
        if (refundFailures++ < 5) {
          logger.warn(`Giving back a request that does not count failed: ${String(error)}`);
        }
      });
    }
  });
}

function givesBack(mode: CountMode, succeeded: boolean): boolean {
  return mode === 'failures' ? succeeded : mode === 'successes' ? !succeeded : false;
}

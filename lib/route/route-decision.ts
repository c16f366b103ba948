import { HttpException } from '@nestjs/common';
import { type LeaseKeeper } from '../flow/lease-keeper.js';
import { type SlotWait, waitForSlot } from '../flow/wait-for-slot.js';
import { combineDecisions } from '../stores/decision.js';
import { type CallStore, type Limits } from '../store-contract/store-call.js';
import { type PolicyDecision, type RateLimitDecision } from '../store-contract/store.interface.js';
import { type RateLimitTelemetry } from '../telemetry/rate-limit-telemetry.js';
import { RouteKeys } from '../keys/route-keys.js';
import { type RouteCall, type RouteFeatures } from './route-plan.js';

/** One store call of a route's decision: its enforced policies, or its shadow ones. */
export interface DecisionPart extends Limits {
  readonly shadow: boolean;
  /** Where the part's policies stand among the route's. */
  readonly indexes: readonly number[];
  decision?: RateLimitDecision;
}

/** A route's decision, with the parts it was made of. */
export interface RouteDecision {
  /** Every policy's answer; `shadow: true` when only shadow policies rejected the request. */
  readonly decision: RateLimitDecision;
  readonly parts: readonly DecisionPart[];
  /** The enforced policies' part; undefined when every policy is in shadow mode. */
  readonly enforced: DecisionPart | undefined;
  /** Whether the enforced policies were allowed after waiting for a slot. */
  readonly waited: boolean;
}

// nginx's status for a client that closed the connection before the answer; never seen by it.
const CLIENT_CLOSED_REQUEST = 499;
const CLIENT_GONE_MESSAGE = 'The client went away while waiting for a slot';

/**
 * Decides a route with features: the enforced and the shadow policies in two calls, each all or
 * nothing on its own, the enforced ones waiting for a slot when the route has `maxWait`. The
 * request is allowed when the enforced ones allow it.
 */
export async function decideRoute(
  call: RouteCall,
  features: RouteFeatures,
  limits: Limits,
  store: CallStore,
  leases: LeaseKeeper,
  telemetry: RateLimitTelemetry,
): Promise<RouteDecision> {
  const parts = splitByShadow(features, features.anyCount ? withLedgers(features, limits) : limits);
  let waited = false;
  const onWaited: SlotWait['onWaited'] = telemetry.enabled
    ? (startedAt, outcome, decision) => {
        waited = outcome === 'waited';
        const route = call.transport.route(call.context, call.plan.route, call.plan.place);
        telemetry.waited(route, decision, startedAt, outcome);
      }
    : undefined;
  const decided = await Promise.all(
    parts.map((part) =>
      part.shadow || (features.maxWaitMs === 0 && features.outcomeWaitMs === 0)
        ? store.execute({ op: 'consume', limits: part })
        : waitForSlot(store, leases, part, slotWait(call, features, onWaited)),
    ),
  );
  parts.forEach((part, n) => (part.decision = decided[n]));
  const enforced = parts.find((p) => !p.shadow);
  // No shadow policy: the one call's decision is the route's, as it is.
  if (parts.length === 1 && enforced !== undefined) {
    return { decision: decided[0], parts, enforced, waited };
  }
  return { decision: merge(parts, limits.policies.length), parts, enforced, waited };
}

/** The parts' answers as one decision over every policy of the route, in the route's order. */
function merge(parts: readonly DecisionPart[], count: number): RateLimitDecision {
  const byPolicy: PolicyDecision[] = new Array(count);
  for (const part of parts) {
    part.indexes.forEach((i, j) => (byPolicy[i] = part.decision!.policies[j]));
  }
  const allowed = parts.find((p) => !p.shadow)?.decision!.allowed ?? true;
  const shadowRejected = parts.some((p) => p.shadow && !p.decision!.allowed);
  const degraded = parts.find((p) => p.decision!.degraded !== undefined)?.decision!.degraded;
  return {
    ...combineDecisions(allowed, byPolicy),
    ...(degraded === undefined ? {} : { degraded }),
    ...(allowed && shadowRejected ? { shadow: true } : {}),
  };
}

/** How long the enforced policies may wait, and how to tell that the client went away. */
function slotWait(
  { context, transport }: RouteCall,
  features: RouteFeatures,
  onWaited: SlotWait['onWaited'],
): SlotWait {
  return {
    maxWaitMs: features.maxWaitMs,
    outcomeWaitMs: features.outcomeWaitMs,
    onAbandon: (listener) => transport.abandoned?.(context, listener),
    abandoned: () => new HttpException(CLIENT_GONE_MESSAGE, CLIENT_CLOSED_REQUEST),
    onWaited,
  };
}

/**
 * The limits with the ledger of each policy that counts only some outcomes: the requests it
 * counted whose outcome is not known yet, so that a rejection they alone cause starts no lock-out.
 */
function withLedgers(features: RouteFeatures, limits: Limits): Limits {
  const ledgers = limits.keys.map((key, i) =>
    features.counts[i] === 'all' ? undefined : RouteKeys.ledgerOf(key),
  );
  return { ...limits, ledgers };
}

function splitByShadow(features: RouteFeatures, limits: Limits): DecisionPart[] {
  const { keys, policies, costs, ledgers, answerWithout } = limits;
  if (!features.anyShadow)
    return [{ shadow: false, indexes: policies.map((_, i) => i), ...limits }];
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
      ...(ledgers === undefined ? {} : { ledgers: indexes.map((i) => ledgers[i]) }),
      ...(answerWithout === undefined ? {} : { answerWithout }),
    });
  }
  return parts;
}

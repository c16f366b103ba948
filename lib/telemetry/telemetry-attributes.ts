import type { Attributes } from '@opentelemetry/api';
import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import { type StoreOperation } from '../store-contract/store-call.js';
import {
  type DecisionOutcome,
  type StoreKind,
  type StoreState,
  type WaitOutcome,
} from './rate-limit-telemetry.js';

/** The attributes the instruments carry; each low-cardinality: never a tracker, never a key. */
export const ATTRIBUTE = {
  policy: 'rate_limit.policy',
  route: 'rate_limit.route',
  algorithm: 'rate_limit.algorithm',
  store: 'rate_limit.store',
  outcome: 'rate_limit.outcome',
  operation: 'rate_limit.operation',
  state: 'rate_limit.state',
} as const;

/**
 * One series of decisions (a route, a policy, an outcome): its attributes, built once, and its
 * counts, kept here and reported when the SDK collects, so that counting is an increment.
 */
export interface DecisionSeries {
  readonly attributes: Attributes;
  decisions: number;
  nearLimit: number;
}

/** The series of one route and policy, one per outcome of a decision or of a wait. */
export type OutcomeSeries = Readonly<Record<DecisionOutcome | WaitOutcome, DecisionSeries>>;

/** What is counted per policy alone: leases held, block-cache answers. */
export interface PolicySeries {
  readonly attributes: Attributes;
  leases: number;
  /** Whether a lease was ever counted: from then on its value is reported, 0 included. */
  leased: boolean;
  blockCacheAnswers: number;
}

const OUTCOMES: ReadonlyArray<DecisionOutcome | WaitOutcome> = [
  'allowed',
  'limited',
  'degraded',
  'shadow_limited',
  'waited',
  'abandoned',
];
const OPERATIONS: readonly StoreOperation[] = [
  'consume',
  'peek',
  'refund',
  'reset',
  'block',
  'reserve',
  'release',
  'renew',
  'settle',
];
const STATES: readonly StoreState[] = ['open', 'half_open', 'closed', 'degraded', 'recovered'];

// Routes times policies of one application. Past this (a route label that is not a pattern),
// further ones share one series named OVERFLOW instead of growing without bound.
const MAX_SERIES = 2048;
const OVERFLOW = '_other';

/**
 * Every series the instruments report, with its attribute set built once and kept, so that
 * recording a decision allocates nothing: per route and policy, per policy, per store operation,
 * per store state.
 */
export class TelemetryAttributes {
  private readonly routes = new Map<string, Map<string, OutcomeSeries>>();
  private readonly byPolicy = new Map<string, PolicySeries>();
  private count = 0;
  private overflowRoute: OutcomeSeries | undefined;
  private overflowPolicy: PolicySeries | undefined;
  /** Per operation: `[ok, error]`. */
  readonly storeCalls: Readonly<Record<StoreOperation, readonly [Attributes, Attributes]>>;
  readonly states: Readonly<Record<StoreState, Attributes>>;

  constructor(private readonly store: StoreKind) {
    const call = (operation: StoreOperation, outcome: 'ok' | 'error') => ({
      [ATTRIBUTE.store]: store,
      [ATTRIBUTE.operation]: operation,
      [ATTRIBUTE.outcome]: outcome,
    });
    this.storeCalls = byKey(OPERATIONS, (op) => [call(op, 'ok'), call(op, 'error')] as const);
    this.states = byKey(STATES, (state) => ({
      [ATTRIBUTE.store]: store,
      [ATTRIBUTE.state]: state,
    }));
  }

  /** The series of decisions on `route` that `policy` decided, one per outcome. */
  decision(route: string, policy: ResolvedPolicy): OutcomeSeries {
    let byPolicy = this.routes.get(route);
    const known = byPolicy?.get(policy.id);
    if (known !== undefined) return known;
    if (this.count >= MAX_SERIES) {
      return (this.overflowRoute ??= this.outcomeSeries(OVERFLOW, OVERFLOW, OVERFLOW));
    }
    const made = this.outcomeSeries(route, policy.name, policy.algorithm);
    if (byPolicy === undefined) this.routes.set(route, (byPolicy = new Map()));
    byPolicy.set(policy.id, made);
    this.count++;
    return made;
  }

  /** The series of `policy` alone, for what is not tied to a route (leases, the block cache). */
  policy(policy: ResolvedPolicy): PolicySeries {
    const known = this.byPolicy.get(policy.id);
    if (known !== undefined) return known;
    if (this.byPolicy.size >= MAX_SERIES) {
      return (this.overflowPolicy ??= this.policySeries(OVERFLOW, OVERFLOW));
    }
    const made = this.policySeries(policy.name, policy.algorithm);
    this.byPolicy.set(policy.id, made);
    return made;
  }

  /** Every decision series there is, for a collection. */
  *decisionSeries(): Iterable<DecisionSeries> {
    for (const byPolicy of this.routes.values()) {
      for (const outcomes of byPolicy.values()) yield* Object.values(outcomes);
    }
    if (this.overflowRoute !== undefined) yield* Object.values(this.overflowRoute);
  }

  /** Every policy series there is, for a collection. */
  *policySeriesAll(): Iterable<PolicySeries> {
    yield* this.byPolicy.values();
    if (this.overflowPolicy !== undefined) yield this.overflowPolicy;
  }

  private outcomeSeries(route: string, policy: string, algorithm: string): OutcomeSeries {
    return byKey(OUTCOMES, (outcome) => ({
      attributes: {
        [ATTRIBUTE.route]: route,
        [ATTRIBUTE.policy]: policy,
        [ATTRIBUTE.algorithm]: algorithm,
        [ATTRIBUTE.store]: this.store,
        [ATTRIBUTE.outcome]: outcome,
      },
      decisions: 0,
      nearLimit: 0,
    }));
  }

  private policySeries(policy: string, algorithm: string): PolicySeries {
    return {
      attributes: {
        [ATTRIBUTE.policy]: policy,
        [ATTRIBUTE.algorithm]: algorithm,
        [ATTRIBUTE.store]: this.store,
      },
      leases: 0,
      leased: false,
      blockCacheAnswers: 0,
    };
  }
}

/** `{ [key]: make(key) }` for every key. */
function byKey<K extends string, V>(keys: readonly K[], make: (key: K) => V): Record<K, V> {
  return Object.fromEntries(keys.map((key) => [key, make(key)])) as Record<K, V>;
}

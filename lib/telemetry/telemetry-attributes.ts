import type { Attributes } from '@opentelemetry/api';
import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import { type StoreOperation } from '../stores/store-call.js';
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

/** One attribute set per outcome of a decision or a wait, for one route and policy. */
export type OutcomeAttributes = Readonly<Record<DecisionOutcome | WaitOutcome, Attributes>>;

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
];
const STATES: readonly StoreState[] = ['open', 'half_open', 'closed', 'degraded', 'recovered'];

// Routes times policies of one application; past this (a route label that is not a pattern),
// attribute sets are built per call instead of growing the cache without bound.
const MAX_CACHED = 4096;

/**
 * Every attribute set the instruments use, built once and kept, so that recording a decision
 * allocates none: per route and policy, per policy, per store operation, per store state.
 */
export class TelemetryAttributes {
  private readonly decisions = new Map<string, Map<string, OutcomeAttributes>>();
  private readonly policies = new Map<string, Attributes>();
  private cached = 0;
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

  /** The attribute sets of a decision on `route` that `policy` decided, one per outcome. */
  decision(route: string, policy: ResolvedPolicy): OutcomeAttributes {
    let byPolicy = this.decisions.get(route);
    const known = byPolicy?.get(policy.id);
    if (known !== undefined) return known;
    const made = byKey(OUTCOMES, (outcome) => ({
      [ATTRIBUTE.route]: route,
      [ATTRIBUTE.policy]: policy.name,
      [ATTRIBUTE.algorithm]: policy.algorithm,
      [ATTRIBUTE.store]: this.store,
      [ATTRIBUTE.outcome]: outcome,
    }));
    if (this.cached < MAX_CACHED) {
      if (byPolicy === undefined) this.decisions.set(route, (byPolicy = new Map()));
      byPolicy.set(policy.id, made);
      this.cached++;
    }
    return made;
  }

  /** The attributes of `policy` alone, for what is not tied to a route (leases, the block cache). */
  policy(policy: ResolvedPolicy): Attributes {
    const known = this.policies.get(policy.id);
    if (known !== undefined) return known;
    const made = {
      [ATTRIBUTE.policy]: policy.name,
      [ATTRIBUTE.algorithm]: policy.algorithm,
      [ATTRIBUTE.store]: this.store,
    };
    if (this.policies.size < MAX_CACHED) this.policies.set(policy.id, made);
    return made;
  }
}

/** `{ [key]: make(key) }` for every key. */
function byKey<K extends string, V>(keys: readonly K[], make: (key: K) => V): Record<K, V> {
  return Object.fromEntries(keys.map((key) => [key, make(key)])) as Record<K, V>;
}

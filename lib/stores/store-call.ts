import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import {
  invoke,
  type RateLimitDecision,
  type RateLimitStore,
  type StoreOperation,
} from './store.interface.js';

/** The policies one store call decides: each with its key and its cost, at the same index. */
export interface Limits {
  readonly keys: readonly string[];
  readonly policies: readonly ResolvedPolicy[];
  readonly costs: readonly number[];
}

/** One call into a store: what it does, to which limits, with what it needs beside them. */
export interface StoreCall {
  readonly op: StoreOperation;
  readonly limits: Limits;
  /** `refund`: the decision whose request is given back; `release`, `renew`: whose leases. */
  readonly of?: RateLimitDecision;
  /** `block`: how long. */
  readonly durationMs?: number;
  /** `reserve`: the longest wait to book. */
  readonly maxWaitMs?: number;
}

/** Runs `call` on `store`; a store without the optional method rejects with an error naming it. */
export function execute(store: RateLimitStore, call: StoreCall): Promise<RateLimitDecision> {
  const { keys, policies, costs } = call.limits;
  return invoke(store, call.op, keys, policies, costs, call);
}

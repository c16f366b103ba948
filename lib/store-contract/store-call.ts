import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import { type RateLimitDecision, type RateLimitStore } from './store.interface.js';

/** What a store call does to the keys: the methods of {@link RateLimitStore} that decide. */
export type StoreOperation =
  'consume' | 'peek' | 'refund' | 'reset' | 'block' | 'reserve' | 'release' | 'renew' | 'settle';

/** The policies one store call decides: each with its key and its cost, at the same index. */
export interface Limits {
  readonly keys: readonly string[];
  readonly policies: readonly ResolvedPolicy[];
  readonly costs: readonly number[];
  /**
   * On a route that counts only some outcomes: per policy, the key of its ledger of requests
   * counted whose outcome is not known yet (undefined for a policy that counts every request). A
   * consume or reserve that counts a request enters it there; a refund takes it out. Absent
   * elsewhere, and then nothing about a call changes.
   */
  readonly ledgers?: readonly (string | undefined)[];
}

/** One call into a store: what it does, to which limits, with what it needs beside them. */
export interface StoreCall {
  readonly op: StoreOperation;
  readonly limits: Limits;
  /**
   * `refund`: the decision whose request is given back; `release`, `renew`: whose leases;
   * `settle`: the reservation whose usage is settled. For `settle`, `limits.costs` are signed:
   * what to charge each policy beyond the estimate (positive, even past the limit) or to give back
   * (negative), in the window the reservation was counted in.
   */
  readonly of?: RateLimitDecision;
  /**
   * `refund` with `limits.ledgers`: what each policy counted of the request `of`, which leaves its
   * ledger now that its outcome is known, whatever is given back.
   */
  readonly counted?: readonly number[];
  /** `block`: how long. */
  readonly durationMs?: number;
  /** `reserve`: the longest wait to book. */
  readonly maxWaitMs?: number;
  /**
   * Set on a correction nobody waits for (a late reply's give-back): it carries no answer
   * deadline, so Redis applies it whenever it arrives, however late a slow network makes it.
   */
  readonly correction?: true;
  /**
   * Set on a call that waited on another call to the same keys, which the store failed (the block
   * cache lets one call of a flooding key ask while the others wait for its answer): the store
   * chain's resilient store answers it as `onStoreError` says at once, without asking the store
   * again, so that none of them waits for a failing store twice. Any other store decides it as
   * usual.
   */
  readonly failedMeanwhile?: true;
}

/**
 * Marks the stores that take a {@link StoreCall} whole, through their `execute` method: the
 * module's own, built on `OperationStore`. A symbol, so that a custom store's own `execute`, if it
 * has one, is never taken for that.
 */
export const TAKES_CALLS: unique symbol = Symbol('nest-rate-limit.takesCalls');

/** A store that takes calls whole; see {@link TAKES_CALLS}. */
export interface CallTakingStore extends RateLimitStore {
  readonly [TAKES_CALLS]: true;
  execute(call: StoreCall): Promise<RateLimitDecision>;
}

/**
 * Runs `call` on `store`: through its `execute` when it takes calls whole, else through the
 * public method of the operation (a custom store). A store without that optional method rejects
 * with an error that names it.
 */
export function execute(store: RateLimitStore, call: StoreCall): Promise<RateLimitDecision> {
  if ((store as Partial<CallTakingStore>)[TAKES_CALLS] === true) {
    return (store as CallTakingStore).execute(call);
  }
  const { keys, policies, costs } = call.limits;
  if (call.op === 'consume') return store.consume(keys, policies, costs);
  if (typeof store[call.op] !== 'function') {
    const name = store.constructor?.name ?? 'store';
    return Promise.reject(new TypeError(`The rate-limit store ${name} has no ${call.op}() method`));
  }
  switch (call.op) {
    case 'block':
      return store.block!(keys, policies, call.durationMs ?? 0);
    case 'refund':
      return store.refund!(keys, policies, costs, call.of);
    case 'reserve':
      return store.reserve!(keys, policies, costs, call.maxWaitMs ?? 0);
    case 'release':
    case 'renew':
    case 'settle':
      return store[call.op]!(keys, policies, costs, call.of!);
    default:
      return store[call.op]!(keys, policies, costs);
  }
}

/**
 * Whether `store` can do `op`: every store consumes, the module's own stores do everything, and
 * a custom store does what it has a method for.
 */
export function supports(store: RateLimitStore, op: StoreOperation): boolean {
  return (
    op === 'consume' ||
    (store as Partial<CallTakingStore>)[TAKES_CALLS] === true ||
    typeof store[op] === 'function'
  );
}

import { type ResolvedPolicy, type StoreErrorPolicy } from '../policy/rate-limit.policy.js';
import { type RateLimitDecision } from './store.interface.js';

/** What a store call does to the keys: the methods of `RateLimitStore` that decide. */
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
  /**
   * Set when a function of yours that the limits waited on did not settle within
   * `functionTimeout`: the store is not asked, and every call on these limits is answered as
   * this `onStoreError` value says (a policy's own answer, if stricter, wins), as if the store had
   * failed. The keys of such limits may stand in for the ones the function would have given.
   */
  readonly answerWithout?: StoreErrorPolicy;
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
 * A store as the module calls it: a {@link StoreCall} taken whole. The module's own stores are
 * built this way; a custom store, which implements the public methods of `RateLimitStore`,
 * is adapted to it once, when the module is built (see `adaptStore`), so that nothing past that
 * point asks what kind of store it holds.
 */
export interface CallStore {
  /** Does what `call` says. */
  execute(call: StoreCall): Promise<RateLimitDecision>;
  /** What the store is, for messages and health reports: 'redis', 'memory', a custom store's class. */
  readonly kind: string;
  /** Whether it can do `op`: the module's stores do everything; a custom store what it has a method for. */
  supports(op: StoreOperation): boolean;
  /** The server that decides on `keys` (a cluster's master); '' for one server, or where it cannot tell. */
  nodeOf(keys: readonly string[]): string;
  /** PINGs the server `nodeOf` named, where the store can tell its servers apart. */
  pingNode?(node: string, withinMs: number): Promise<unknown>;
  close(): Promise<void>;
}

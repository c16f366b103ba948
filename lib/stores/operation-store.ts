import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import {
  type CallStore,
  type StoreCall,
  type StoreOperation,
} from '../store-contract/store-call.js';
import { type RateLimitDecision, type RateLimitStore } from '../store-contract/store.interface.js';

/**
 * A store that does everything through one method: each public method of `RateLimitStore`
 * becomes a {@link StoreCall} handed to `execute`. The module's stores build on it, so that an
 * operation is spelled out once, not once per store, and the module hands them its calls as they
 * are, without taking them apart into arguments and building them again.
 */
export abstract class OperationStore implements RateLimitStore, CallStore {
  /** Does what `call` says; every public method comes down to this. */
  abstract execute(call: StoreCall): Promise<RateLimitDecision>;

  /** Every operation: each public method comes down to `execute`. */
  supports(_op: StoreOperation): boolean {
    return true;
  }

  /** What the store is, for messages and health reports: its class's name unless it says. */
  get kind(): string {
    return this.constructor.name;
  }

  /** One server unless a store says otherwise. */
  nodeOf(_keys: readonly string[]): string {
    return '';
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  consume(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
  ): Promise<RateLimitDecision> {
    return this.execute({ op: 'consume', limits: { keys, policies, costs } });
  }

  peek(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
  ): Promise<RateLimitDecision> {
    return this.execute({ op: 'peek', limits: { keys, policies, costs } });
  }

  refund(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    of?: RateLimitDecision,
  ): Promise<RateLimitDecision> {
    return this.execute({ op: 'refund', limits: { keys, policies, costs }, of });
  }

  reset(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
  ): Promise<RateLimitDecision> {
    return this.execute({ op: 'reset', limits: { keys, policies, costs } });
  }

  /** A block locks the keys out whatever a request costs: its costs are 1 each. */
  block(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    durationMs: number,
  ): Promise<RateLimitDecision> {
    const costs = policies.map(() => 1);
    return this.execute({ op: 'block', limits: { keys, policies, costs }, durationMs });
  }

  reserve(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    maxWaitMs: number,
  ): Promise<RateLimitDecision> {
    return this.execute({ op: 'reserve', limits: { keys, policies, costs }, maxWaitMs });
  }

  release(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    of: RateLimitDecision,
  ): Promise<RateLimitDecision> {
    return this.execute({ op: 'release', limits: { keys, policies, costs }, of });
  }

  /** `deltas` are signed: see `RateLimitStore.settle`. */
  settle(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    deltas: readonly number[],
    of: RateLimitDecision,
  ): Promise<RateLimitDecision> {
    return this.execute({ op: 'settle', limits: { keys, policies, costs: deltas }, of });
  }

  renew(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    of: RateLimitDecision,
  ): Promise<RateLimitDecision> {
    return this.execute({ op: 'renew', limits: { keys, policies, costs }, of });
  }
}

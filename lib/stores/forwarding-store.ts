import { OperationStore } from './operation-store.js';
import { execute, type StoreCall } from '../store-contract/store-call.js';
import { type RateLimitDecision, type RateLimitStore } from '../store-contract/store.interface.js';

/**
 * A store in front of another: every call goes on to `inner` as it is, so a wrapper overrides
 * `execute` only for what it changes and hands the rest to `super.execute`. The server that
 * decides is the inner store's; closing closes it.
 */
export abstract class ForwardingStore extends OperationStore {
  constructor(readonly inner: RateLimitStore) {
    super();
  }

  execute(call: StoreCall): Promise<RateLimitDecision> {
    return execute(this.inner, call);
  }

  nodeOf(keys: readonly string[]): string {
    return this.inner.nodeOf?.(keys) ?? '';
  }

  close(): Promise<void> {
    return this.inner.close?.() ?? Promise.resolve();
  }
}

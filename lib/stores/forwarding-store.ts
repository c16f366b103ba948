import { OperationStore } from './operation-store.js';
import {
  type CallStore,
  type StoreCall,
  type StoreOperation,
} from '../store-contract/store-call.js';
import { type RateLimitDecision } from '../store-contract/store.interface.js';

/**
 * A store in front of another: every call goes on to `inner` as it is, so a wrapper overrides
 * `execute` only for what it changes and hands the rest to `super.execute`. The server that
 * decides, what it can do and what it is are the inner store's; closing closes it.
 */
export abstract class ForwardingStore extends OperationStore {
  constructor(readonly inner: CallStore) {
    super();
  }

  execute(call: StoreCall): Promise<RateLimitDecision> {
    return this.inner.execute(call);
  }

  override get kind(): string {
    return this.inner.kind;
  }

  override supports(op: StoreOperation): boolean {
    return this.inner.supports(op);
  }

  override nodeOf(keys: readonly string[]): string {
    return this.inner.nodeOf(keys);
  }

  override close(): Promise<void> {
    return this.inner.close();
  }
}

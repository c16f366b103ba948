import { OperationStore } from './operation-store.js';
import {
  type CallStore,
  type StoreCall,
  type StoreOperation,
} from '../store-contract/store-call.js';
import { type RateLimitDecision, type RateLimitStore } from '../store-contract/store.interface.js';

/**
 * The store the module calls, made of the store it was given, once: the module's own stores
 * already take calls whole; a custom store, which implements the public methods, is wrapped in a
 * {@link MethodStore}.
 */
export function adaptStore(store: RateLimitStore): CallStore & RateLimitStore {
  return store instanceof OperationStore ? store : new MethodStore(store);
}

/**
 * A custom store, called through its public methods: each {@link StoreCall} becomes the method
 * of its operation. What the store lacks is known here and nowhere else: a call to a method it
 * does not have rejects with an error that names it, and `nodeOf` or `pingNode` that throw count
 * as a store that cannot tell.
 */
export class MethodStore extends OperationStore {
  constructor(readonly store: RateLimitStore) {
    super();
    if (typeof store.pingNode === 'function') {
      this.pingNode = (node, withinMs) => store.pingNode!(node, withinMs);
    }
  }

  readonly pingNode?: (node: string, withinMs: number) => Promise<unknown>;

  override get kind(): string {
    return this.store.constructor?.name ?? 'store';
  }

  execute(call: StoreCall): Promise<RateLimitDecision> {
    const { store } = this;
    const { keys, policies, costs } = call.limits;
    if (call.op === 'consume') return store.consume(keys, policies, costs);
    if (!this.supports(call.op)) {
      return Promise.reject(
        new TypeError(`The rate-limit store ${this.kind} has no ${call.op}() method`),
      );
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

  override supports(op: StoreOperation): boolean {
    return op === 'consume' || typeof this.store[op] === 'function';
  }

  override nodeOf(keys: readonly string[]): string {
    try {
      return this.store.nodeOf?.(keys) ?? '';
    } catch {
      return '';
    }
  }

  override close(): Promise<void> {
    return this.store.close?.() ?? Promise.resolve();
  }
}

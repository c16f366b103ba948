import { answerFor, answerWithout, followsItsRequest } from './store-error-answers.js';
import { ForwardingStore } from '../forwarding-store.js';
import { type StoreCall } from '../../store-contract/store-call.js';
import { type RateLimitDecision } from '../../store-contract/store.interface.js';

/**
 * The head of a chain over a store that cannot fail or stall (the memory store): there is nothing
 * to guard, so it only answers what must be answered without the store. A call that a user
 * function's expiry marked (see `Limits.answerWithout`) gets its policies' `onStoreError` answer;
 * a give-back for a request that `'allow'` or `'deny'` answered changes nothing, since nothing
 * counted that request. Everything else goes to the store as it is.
 */
export class UnguardedStore extends ForwardingStore {
  override execute(call: StoreCall): Promise<RateLimitDecision> {
    const { op, of, limits } = call;
    if (followsItsRequest(op)) {
      const counted = of?.degraded === undefined || of.degraded === 'memory';
      return counted ? this.inner.execute(call) : Promise.resolve(of!);
    }
    const marked = limits.answerWithout;
    if (marked === undefined) return this.inner.execute(call);
    return answerWithout(call, answerFor(limits.policies, marked), this.inner);
  }
}

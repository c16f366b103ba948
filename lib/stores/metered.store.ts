import { type RateLimitTelemetry } from '../telemetry/rate-limit-telemetry.js';
import { ForwardingStore } from './forwarding-store.js';
import { execute, type StoreCall } from './store-call.js';
import { type RateLimitDecision, type RateLimitStore } from './store.interface.js';

/**
 * Times each call to a store that has no resilience layer to time it (the memory store, when it
 * is the module's store), for the `rate_limit.store.duration` histogram. Used only while metrics
 * are recorded.
 */
export class MeteredStore extends ForwardingStore {
  constructor(
    inner: RateLimitStore,
    private readonly telemetry: RateLimitTelemetry,
  ) {
    super(inner);
  }

  override async execute(call: StoreCall): Promise<RateLimitDecision> {
    const startedAt = performance.now();
    let ok = false;
    try {
      const decision = await execute(this.inner, call);
      ok = true;
      return decision;
    } finally {
      this.telemetry.storeCall(call.op, ok, startedAt, performance.now());
    }
  }
}

import { Inject, Injectable } from '@nestjs/common';
import { KeyBuilder, policySuffix } from './keys/key-builder.js';
import { RATE_LIMIT_OPTIONS } from './rate-limit.constants.js';
import { type ResolvedRateLimitOptions } from './rate-limit.options.js';
import {
  configError,
  type RateLimitPolicy,
  type ResolvedPolicy,
  resolvePolicy,
} from './rate-limit.policy.js';
import { type RateLimitDecision, RateLimitStore } from './stores/store.interface.js';

/** Options of one `consume()` call. */
export interface ConsumeOptions {
  /** How many requests this call counts as. A positive integer no larger than the threshold. Default 1. */
  cost?: number;
}

/**
 * Rate limiting outside HTTP handlers: queues, jobs, sockets, or any code path. Uses the same
 * store, key prefix and policies as the guard.
 *
 * @example
 * ```ts
 * const decision = await rateLimit.consume(`reply:${userId}`, { period: 60, threshold: 5 });
 * if (!decision.allowed) throw new Error(`retry in ${decision.retryAfterMs} ms`);
 * ```
 */
@Injectable()
export class RateLimitService {
  private readonly keys: KeyBuilder;
  // Callers usually pass the same policy object every time; validate it once.
  private readonly resolved = new WeakMap<RateLimitPolicy, ResolvedPolicy>();

  constructor(
    @Inject(RATE_LIMIT_OPTIONS) options: ResolvedRateLimitOptions,
    @Inject(RateLimitStore) private readonly store: RateLimitStore,
  ) {
    this.keys = new KeyBuilder(options.keyPrefix);
  }

  /**
   * Counts `cost` requests against `key` under `policy`, atomically, and records them only if
   * they fit.
   */
  consume(
    key: string,
    policy: RateLimitPolicy = {},
    options?: ConsumeOptions,
  ): Promise<RateLimitDecision> {
    const where = 'RateLimitService.consume';
    if (typeof key !== 'string' || key === '')
      throw configError(where, 'key', key, 'a non-empty string');
    let resolved = this.resolved.get(policy);
    if (resolved === undefined) {
      resolved = resolvePolicy(policy, where);
      if (typeof policy === 'object' && policy !== null) this.resolved.set(policy, resolved);
    }
    const cost = options?.cost ?? 1;
    if (!Number.isSafeInteger(cost) || cost < 1 || cost > resolved.threshold) {
      throw configError(
        where,
        'cost',
        cost,
        `an integer from 1 to the threshold (${resolved.threshold})`,
      );
    }
    return this.store.consume(this.keys.forKey(key, policySuffix(resolved)), resolved, cost);
  }
}

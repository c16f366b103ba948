import { Inject, Injectable } from '@nestjs/common';
import { KeyBuilder } from './keys/key-builder.js';
import { RATE_LIMIT_OPTIONS } from './rate-limit.constants.js';
import { type ResolvedRateLimitOptions } from './rate-limit.options.js';
import { compileTemplates, type RoutePolicy } from './rate-limit.plan.js';
import {
  checkCount,
  configError,
  type RateLimitPolicy,
  type ResolvedPolicy,
} from './rate-limit.policy.js';
import { type RateLimitDecision, RateLimitStore } from './stores/store.interface.js';

/** Options of one `consume()` call. */
export interface ConsumeOptions {
  /** How many requests this call counts as, for every policy. Default: each policy's `cost`, else 1. */
  cost?: number;
}

interface Compiled {
  readonly policies: readonly ResolvedPolicy[];
  readonly costs: readonly number[];
}

const WHERE = 'RateLimitService.consume';

/**
 * Rate limiting outside HTTP handlers: queues, jobs, sockets, or any code path. Uses the same
 * store, key prefix and algorithms as the guard.
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
  private readonly compiled = new WeakMap<object, Compiled>();

  constructor(
    @Inject(RATE_LIMIT_OPTIONS) options: ResolvedRateLimitOptions,
    @Inject(RateLimitStore) private readonly store: RateLimitStore,
  ) {
    this.keys = new KeyBuilder(options.keyPrefix);
  }

  /**
   * Counts one call against `key` under one or several policies, atomically: it is recorded by
   * all of them or, if any rejects it, by none. A cost no policy could ever allow is rejected at
   * once with `retryAfterMs: Infinity`.
   */
  consume(
    key: string,
    policy: RateLimitPolicy | readonly RateLimitPolicy[] = {},
    options?: ConsumeOptions,
  ): Promise<RateLimitDecision> {
    if (typeof key !== 'string' || key === '')
      throw configError(WHERE, 'key', key, 'a non-empty string');
    const { policies, costs } = this.compile(policy);
    const cost = options?.cost === undefined ? undefined : checkCount(options.cost, 'cost', WHERE);
    const keys = policies.map((p, i) => this.keys.forKey(key, p, i));
    return this.store.consume(
      keys,
      policies,
      cost === undefined ? costs : policies.map(() => cost),
    );
  }

  private compile(policy: RateLimitPolicy | readonly RateLimitPolicy[]): Compiled {
    const cacheable = typeof policy === 'object' && policy !== null;
    let compiled = cacheable ? this.compiled.get(policy) : undefined;
    if (compiled === undefined) {
      const templates = compileTemplates(policy as RoutePolicy | readonly RoutePolicy[], WHERE);
      if (templates.some((t) => t.fixed === undefined || typeof t.cost !== 'number')) {
        throw configError(
          WHERE,
          'policy',
          'a function',
          'plain values: there is no request context here',
        );
      }
      compiled = {
        policies: templates.map((t) => t.fixed!),
        costs: templates.map((t) => t.cost as number),
      };
      if (cacheable) this.compiled.set(policy, compiled);
    }
    return compiled;
  }
}

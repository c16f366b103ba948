import { Inject, Injectable, Optional } from '@nestjs/common';
import { LeaseKeeper } from '../flow/lease-keeper.js';
import { acquirePermit, type RateLimitPermit } from './permit.js';
import { ServiceLimits } from './service-limits.js';
import { type AcquireOptions, checkCallOptions, type ConsumeOptions } from './service-options.js';
import { RATE_LIMIT_OPTIONS, RATE_LIMIT_TELEMETRY } from '../rate-limit.constants.js';
import { NO_TELEMETRY, type RateLimitTelemetry } from '../telemetry/rate-limit-telemetry.js';
import { type ResolvedRateLimitOptions } from '../module/rate-limit.options.js';
import { type Duration, type RateLimitPolicy } from '../policy/rate-limit.policy.js';
import { configError, parseDuration } from '../policy/validation.js';
import { execute, type StoreCall, type StoreOperation } from '../stores/store-call.js';
import {
  clearOverride,
  listOverrides,
  type OverrideInForce,
  setOverride,
} from '../overrides/override-commands.js';
import { type OverrideLimit, type OverrideOptions } from '../overrides/overridden-policy.js';
import { OverrideRegistry } from '../overrides/override-registry.js';
import { type RateLimitDecision, RateLimitStore } from '../stores/store.interface.js';

// Built once: the hot path must not assemble the place name of an error it rarely throws.
const WHERE: Readonly<Record<StoreOperation, string>> = {
  consume: 'RateLimitService.consume',
  peek: 'RateLimitService.peek',
  refund: 'RateLimitService.refund',
  reset: 'RateLimitService.reset',
  block: 'RateLimitService.block',
  reserve: 'RateLimitService.acquire',
  release: 'RateLimitService.acquire',
  renew: 'RateLimitService.acquire',
  settle: 'RateLimitService.reserve',
};

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
  private readonly limits: ServiceLimits;

  constructor(
    @Inject(RATE_LIMIT_OPTIONS) options: ResolvedRateLimitOptions,
    @Inject(RateLimitStore) private readonly store: RateLimitStore,
    private readonly leases: LeaseKeeper,
    private readonly registry: OverrideRegistry,
    @Optional()
    @Inject(RATE_LIMIT_TELEMETRY)
    private readonly telemetry: RateLimitTelemetry = NO_TELEMETRY,
  ) {
    this.limits = new ServiceLimits(options.keyPrefix, registry);
  }

  /**
   * Changes the limit of every policy named `policyName`, route and service policies alike, on
   * every instance (through Redis; the memory store's instance only), until `clearOverride` or
   * `ttl`. Usage carries over: a limit lowered below what a caller used rejects it until its
   * usage falls under the new limit; a raised one lets it through at once (buckets: see the
   * operations page). With `tracker`, only that caller's quota: the value the module's
   * `getTracker` returns (default `user:<id>`, else `ip:<address>`), a policy's own `tracker`,
   * or the `key` given to this service; it wins over the override for every tracker. Resolves
   * once it is in force on this instance. Refuses a name no policy known here has, and bad values,
   * naming the field.
   *
   * @example
   * ```ts
   * // a customer on a launch day: ten times the API limit for two hours
   * await rateLimit.override('api', { threshold: 1000 }, { tracker: 'customer-42', ttl: '2h' });
   * // everyone else: half, until cleared
   * await rateLimit.override('api', { threshold: 50, period: '1m' });
   * ```
   */
  override(policyName: string, limit: OverrideLimit, options?: OverrideOptions): Promise<void> {
    return setOverride(this.registry, policyName, limit, options);
  }

  /**
   * Ends the override of `policyName` (for every tracker, or for `tracker`) on every instance:
   * the policies' own limits apply again. Resolves whether there was one.
   *
   * @example
   * ```ts
   * await rateLimit.clearOverride('api', { tracker: 'customer-42' });
   * ```
   */
  clearOverride(policyName: string, options?: Pick<OverrideOptions, 'tracker'>): Promise<boolean> {
    return clearOverride(this.registry, policyName, options);
  }

  /**
   * Every override in force, as the store holds them now: policy, tracker, the values in place of
   * the policies' own, and the time left of those with a `ttl`.
   *
   * @example
   * ```ts
   * for (const o of await rateLimit.overrides()) {
   *   console.log(o.policy, o.tracker ?? '(all)', o.threshold, o.expiresAt?.toISOString() ?? 'until cleared');
   * }
   * ```
   */
  overrides(): Promise<OverrideInForce[]> {
    return listOverrides(this.registry);
  }

  /**
   * Waits until a call may proceed under every policy, up to `maxWait`, and resolves with a
   * permit; rejects with a `RateLimitException` (its `retryAfterMs` says when it could) at once
   * when it cannot proceed in time, without booking anything. On the bucket algorithms the slot
   * is booked in the one store call that answers, and callers on every instance go in the order
   * they booked, at the policy's spacing; the window algorithms are asked again when their
   * `retryAfterMs` has passed; a `'concurrency'` policy holds a lease until `release()`.
   *
   * @example
   * ```ts
   * const permit = await rateLimit.acquire('partner-api', { algorithm: 'leaky-bucket', period: '1s', threshold: 10, burst: 1 }, { maxWait: '5s' });
   * try {
   *   await fetch('https://partner.example/api');
   * } finally {
   *   await permit.release();
   * }
   * ```
   */
  async acquire(
    key: string,
    policy: RateLimitPolicy | readonly RateLimitPolicy[],
    options?: AcquireOptions,
  ): Promise<RateLimitPermit> {
    return this.permit('RateLimitService.acquire', key, policy, options);
  }

  /**
   * `acquire`, then `fn()`, then the permit's `release()` once `fn` settles, whether it resolves
   * or throws. Returns or throws what `fn` does: the one-liner for calls to a rate-limited API.
   *
   * @example
   * ```ts
   * const PARTNER = { algorithm: 'leaky-bucket', period: '1s', threshold: 10, burst: 1 } as const;
   * const rates = await rateLimit.run('partner-api', PARTNER, () => fetch('https://partner.example/rates'));
   * ```
   */
  async run<T>(
    key: string,
    policy: RateLimitPolicy | readonly RateLimitPolicy[],
    fn: () => T | Promise<T>,
    options?: AcquireOptions,
  ): Promise<T> {
    if (typeof fn !== 'function') {
      throw configError('RateLimitService.run', 'fn', fn, 'a function to run once allowed');
    }
    const permit = await this.permit('RateLimitService.run', key, policy, options);
    try {
      return await fn();
    } finally {
      await permit.release();
    }
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
    return this.operate('consume', key, policy, options);
  }

  /**
   * The decision `consume` would return now, recording nothing: `remaining` is what would be
   * left after such a call.
   *
   * @example
   * ```ts
   * const { allowed, retryAfterMs } = await rateLimit.peek(`export:${userId}`, EXPORTS);
   * if (!allowed) return { status: 'busy', retryInMs: retryAfterMs };
   * ```
   */
  peek(
    key: string,
    policy: RateLimitPolicy | readonly RateLimitPolicy[] = {},
    options?: ConsumeOptions,
  ): Promise<RateLimitDecision> {
    return this.operate('peek', key, policy, options);
  }

  /**
   * Gives `cost` (default: each policy's cost, else 1) back to every policy, never past a full
   * quota, and answers with what is left: `remaining` is each policy's quota now. The sliding log forgets its most recent
   * requests; the windows take it off the current window; the token bucket gets tokens back;
   * GCRA moves its arrival time back, never before now. A local block of the key ends at once on
   * this instance, and within a second on the others.
   *
   * @example
   * ```ts
   * const decision = await rateLimit.consume(`sms:${phone}`, SMS);
   * if (decision.allowed && !(await sms.send(phone, text))) {
   *   await rateLimit.refund(`sms:${phone}`, SMS); // a message that never left costs nothing
   * }
   * ```
   */
  refund(
    key: string,
    policy: RateLimitPolicy | readonly RateLimitPolicy[] = {},
    options?: ConsumeOptions,
  ): Promise<RateLimitDecision> {
    return this.operate('refund', key, policy, options);
  }

  /**
   * Forgets everything `key` has used under each policy: the full quota is back, on every
   * instance (a local block ends at once here, within a second elsewhere). Answers with the
   * full quota.
   *
   * @example
   * ```ts
   * await rateLimit.reset(`login:${username}`, LOGIN_ATTEMPTS); // after a successful login
   * ```
   */
  reset(
    key: string,
    policy: RateLimitPolicy | readonly RateLimitPolicy[] = {},
  ): Promise<RateLimitDecision> {
    return this.operate('reset', key, policy, undefined);
  }

  /**
   * Locks `key` out of each policy for `duration` from now, as `blockDuration` would after a
   * rejection, on every instance: e.g. an admin's ban. `reset` lifts it. A number means seconds.
   *
   * @example
   * ```ts
   * await rateLimit.block(`login:${username}`, LOGIN_ATTEMPTS, '24h');
   * ```
   */
  block(
    key: string,
    policy: RateLimitPolicy | readonly RateLimitPolicy[],
    duration: Duration,
  ): Promise<RateLimitDecision> {
    const durationMs = parseDuration(duration, 'duration', 'RateLimitService.block');
    return this.operate('block', key, policy, undefined, { durationMs });
  }

  private async permit(
    where: string,
    key: string,
    policy: RateLimitPolicy | readonly RateLimitPolicy[],
    options: AcquireOptions | undefined,
  ): Promise<RateLimitPermit> {
    checkCallOptions(options, true, where);
    const { keys, policies, costs } = this.limits.of(where, key, policy, options, true);
    return acquirePermit(
      this.store,
      this.leases,
      keys,
      policies,
      costs,
      options,
      where,
      this.telemetry,
    );
  }

  private operate(
    op: StoreOperation,
    key: string,
    policy: RateLimitPolicy | readonly RateLimitPolicy[],
    options: ConsumeOptions | undefined,
    extras?: Omit<StoreCall, 'op' | 'limits'>,
  ): Promise<RateLimitDecision> {
    const where = WHERE[op];
    checkCallOptions(options, false, where);
    const limits = this.limits.of(where, key, policy, options, op !== 'consume');
    const decided = execute(this.store, { ...extras, op, limits });
    // Only consume decides: peek records nothing; refund, reset and block are no requests.
    return op === 'consume' ? this.telemetry.counted(where, decided) : decided;
  }
}

import { Inject, Injectable, Optional } from '@nestjs/common';
import { LeaseKeeper } from '../flow/lease-keeper.js';
import { type RateLimitPermit } from './permit.js';
import { type RateLimitReservation } from './reservation.js';
import { ServiceCalls } from './service-calls.js';
import { ServiceLimits } from './service-limits.js';
import {
  type AcquireOptions,
  type ConsumeOptions,
  type ReserveOptions,
  type RunOptions,
} from './service-options.js';
import {
  RATE_LIMIT_CALL_STORE,
  RATE_LIMIT_OPTIONS,
  RATE_LIMIT_TELEMETRY,
} from '../rate-limit.constants.js';
import { NO_TELEMETRY, type RateLimitTelemetry } from '../telemetry/rate-limit-telemetry.js';
import { type ResolvedRateLimitOptions } from '../options/rate-limit.options.js';
import { type Duration, type RateLimitPolicy } from '../policy/rate-limit.policy.js';
import { parseDuration } from '../policy/validation.js';
import {
  clearOverride,
  listOverrides,
  type OverrideInForce,
  setOverride,
} from '../overrides/override-commands.js';
import { type OverrideLimit, type OverrideOptions } from '../overrides/overridden-policy.js';
import { OverrideRegistry } from '../overrides/override-registry.js';
import { type RateLimitDecision } from '../store-contract/store.interface.js';
import { type CallStore } from '../store-contract/store-call.js';

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
  private readonly calls: ServiceCalls;

  constructor(
    @Inject(RATE_LIMIT_OPTIONS) options: ResolvedRateLimitOptions,
    @Inject(RATE_LIMIT_CALL_STORE) store: CallStore,
    leases: LeaseKeeper,
    private readonly registry: OverrideRegistry,
    @Optional()
    @Inject(RATE_LIMIT_TELEMETRY)
    telemetry: RateLimitTelemetry = NO_TELEMETRY,
  ) {
    const limits = new ServiceLimits(options.keyPrefix, registry);
    this.calls = new ServiceCalls(store, leases, limits, telemetry);
  }

  /**
   * Changes the limit of every policy named `policyName`, route and service policies alike, on
   * every instance (through Redis; the memory store's instance only), until `clearOverride` or
   * `ttl`. Usage carries over: a limit lowered below what a caller used rejects it until its
   * usage falls under the new limit; a raised one lets it through at once (buckets: see the
   * operations page). With `tracker`, only that caller's quota: the value the module's
   * `getTracker` returns (default `user:<id>`, else `ip:<address>`), a policy's own `tracker`,
   * or the `key` given to this service; it wins over the override for every tracker. Resolves
   * once it is in force on this instance. Refuses a name no policy known here has, and values out
   * of bounds (a `tracker` over 1,024 characters, a `threshold` or `burst` past 10^9, a `period`
   * or `ttl` past 10 years, a new override past the 10,000 in force), naming the field and the
   * bound, before anything is stored. See docs/operations.md, Changing limits at runtime.
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
   * they booked, spaced strictly unless `strict: false` (no span of one period sees more than
   * `threshold` starts, at about 92% of the rate); the window algorithms are asked again when their
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
    return this.calls.permit('RateLimitService.acquire', key, policy, options);
  }

  /**
   * `acquire`, then `fn()`, then the permit's `release()` once `fn` settles, whether it resolves
   * or throws. Returns or throws what `fn` does: the one-liner for calls to a rate-limited API.
   * With `usage`, the call is a reservation instead, settled with what `usage` reads off the
   * result (see `reserve`).
   *
   * @example
   * ```ts
   * const PARTNER = { algorithm: 'leaky-bucket', period: '1s', threshold: 10, burst: 1 } as const;
   * const rates = await rateLimit.run('partner-api', PARTNER, () => fetch('https://partner.example/rates'));
   * ```
   */
  run<T>(
    key: string,
    policy: RateLimitPolicy | readonly RateLimitPolicy[],
    fn: () => T | Promise<T>,
    options?: RunOptions<T>,
  ): Promise<T> {
    return this.calls.run(key, policy, fn, options);
  }

  /**
   * Takes `estimate` from every policy now, atomically, as `consume` would (several policies,
   * all or nothing, lock-outs), and resolves with a ticket to `settle` once the call's real
   * usage is known: for budgets counted in what a call consumed (tokens, bytes, query cost).
   * Rejects with a `RateLimitException` when the estimate does not fit within `maxWait`
   * (default 0: at once). A ticket never settled keeps its estimate.
   *
   * @example
   * ```ts
   * const TOKENS_PER_DAY = { algorithm: 'fixed-window', calendar: 'day', threshold: 10_000 } as const;
   * const ticket = await rateLimit.reserve(`tokens:${userId}`, TOKENS_PER_DAY, 2_000);
   * const reply = await model.complete(prompt);
   * await ticket.settle(reply.usage.total_tokens);
   * ```
   */
  reserve(
    key: string,
    policy: RateLimitPolicy | readonly RateLimitPolicy[],
    estimate: number,
    options?: ReserveOptions,
  ): Promise<RateLimitReservation> {
    return this.calls.reserve(key, policy, estimate, options);
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
    return this.calls.operate('consume', key, policy, options);
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
    return this.calls.operate('peek', key, policy, options);
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
    return this.calls.operate('refund', key, policy, options);
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
    return this.calls.operate('reset', key, policy, undefined);
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
    return this.calls.operate('block', key, policy, undefined, { durationMs });
  }
}

import { Inject, Injectable } from '@nestjs/common';
import { RATE_LIMIT_CALL_STORE, RATE_LIMIT_OPTIONS } from '../rate-limit.constants.js';
import { type ResolvedRateLimitOptions } from '../options/rate-limit.options.js';
import { ForwardingStore } from '../stores/forwarding-store.js';
import { RedisStore } from '../stores/redis/redis.store.js';
import { ResilientStore, type ServerAnswer } from '../stores/resilience/resilient.store.js';
import { type CallStore } from '../store-contract/store-call.js';
import { nodeDetails, type RateLimitHealthDetails, resilienceDetails } from './store-health.js';

export type { RateLimitHealthDetails } from './store-health.js';

/** What {@link RateLimitHealthIndicator.isHealthy} resolves with: a Terminus indicator result. */
export type RateLimitHealthResult<Key extends string = string> = Record<
  Key,
  RateLimitHealthDetails
>;

/**
 * A health indicator for `@nestjs/terminus` (11 or later), which the module provides and
 * exports. It reports the store in use, whether it answers (for Redis, a PING bounded by the
 * module's `timeout`, made by the check itself: requests never pay for it), whether a fallback
 * answers decisions meanwhile and since when, the circuit breaker, how many servers fail, and
 * whether decisions run as functions or scripts. A server in an outage stays failing until it
 * answers: when no decision is asking it, the check does, as the breaker's probe would (one
 * probe at a time, within the timeout), and its answer ends the outage as a decision's would.
 *
 * It is `up` while decisions are answered, by the store or by a fallback that answers them
 * (`onStoreError: 'memory'` or `'allow'`, the degradation then in its details), and `down`
 * while they are denied: the store fails and the module's `onStoreError` is `'deny'` (with a
 * function, what it chose for the latest failure). Policies with an `onStoreError` of their own
 * do not change it. It resolves with a `down` result rather than throwing, which Terminus answers
 * with 503 in every version from 11; it never rejects. Terminus is not needed to use it: the
 * result is a plain object.
 *
 * @example
 * ```ts
 * @Controller('health')
 * export class HealthController {
 *   constructor(
 *     private readonly health: HealthCheckService,
 *     private readonly rateLimit: RateLimitHealthIndicator,
 *   ) {}
 *
 *   @Get()
 *   @HealthCheck()
 *   check() {
 *     return this.health.check([() => this.rateLimit.isHealthy('rate-limit')]);
 *   }
 * }
 * ```
 */
@Injectable()
export class RateLimitHealthIndicator {
  private readonly kind: string;
  private readonly resilient: ResilientStore | undefined;
  private readonly redis: RedisStore | undefined;
  /** A cluster's PING in flight (it only says whether one master answers): checks share it. */
  private pinging: Promise<ServerAnswer> | undefined;

  constructor(
    @Inject(RATE_LIMIT_CALL_STORE) store: CallStore,
    @Inject(RATE_LIMIT_OPTIONS) private readonly options: ResolvedRateLimitOptions,
  ) {
    // Resolved once: the module's wrappers (block cache, resilience layer) around the store.
    let primary = store;
    while (primary instanceof ForwardingStore) {
      if (primary instanceof ResilientStore) this.resilient = primary;
      primary = primary.inner;
    }
    if (primary instanceof RedisStore) this.redis = primary;
    this.kind = store.kind;
  }

  /**
   * The rate limiter's health under `key`, as a Terminus indicator result:
   * `{ [key]: { status: 'up' | 'down', ...details } }` (see {@link RateLimitHealthDetails}).
   *
   * @example
   * ```ts
   * const result = await indicator.isHealthy('rate-limit');
   * if (result['rate-limit'].degraded) console.warn(result['rate-limit'].degradedSince);
   * ```
   */
  async isHealthy<const Key extends string>(key: Key): Promise<RateLimitHealthResult<Key>> {
    const details = await this.details();
    return { [key]: details } as RateLimitHealthResult<Key>;
  }

  private async details(): Promise<RateLimitHealthDetails> {
    const resilient = this.resilient;
    // A memory store alone cannot fail.
    if (resilient === undefined) {
      return { status: 'up', store: this.kind, reachable: true, degraded: false };
    }
    // The store asks its servers and counts their answers; a cluster's PING is reported beside.
    const [answer, clusterPing] = await Promise.all([
      resilient.probe(),
      this.redis?.isCluster === true ? this.pingCluster() : undefined,
    ]);
    const probe = answer ?? clusterPing;
    const state = resilienceDetails(resilient.servers());
    const details: RateLimitHealthDetails = {
      status: state.degraded && state.fallback === 'deny' ? 'down' : 'up',
      store: this.kind,
      ...(this.redis === undefined
        ? {}
        : {
            library: this.redis.library,
            decisionsRunAs: this.redis.usesFunctions ? 'functions' : 'scripts',
          }),
      reachable: probe?.reachable ?? state.failingNodes === 0,
      ...(probe?.latencyMs === undefined ? {} : { latencyMs: probe.latencyMs }),
      ...(probe?.error === undefined ? {} : { error: probe.error }),
      ...state,
      ...(this.redis?.isCluster === true ? { nodes: nodeDetails(resilient.servers()) } : {}),
    };
    // Absent rather than undefined, so the JSON and a deep equality agree.
    for (const field of Object.keys(details) as Array<keyof RateLimitHealthDetails>) {
      if (details[field] === undefined) delete details[field];
    }
    return details;
  }

  /** PINGs a cluster's first master, once for checks that arrive together. */
  private pingCluster(): Promise<ServerAnswer> {
    this.pinging ??= this.ping().finally(() => {
      this.pinging = undefined;
    });
    return this.pinging;
  }

  private async ping(): Promise<ServerAnswer> {
    try {
      const latencyMs = await this.redis!.ping(this.options.timeout);
      return { reachable: true, latencyMs: Math.round(latencyMs * 10) / 10 };
    } catch (error) {
      return { reachable: false, error: error instanceof Error ? error.message : String(error) };
    }
  }
}

import { type ExecutionContext, type ModuleMetadata, type Type } from '@nestjs/common';
import { type RedisOptions } from 'ioredis';
import { type RedisClient } from '../stores/redis/clients/redis-client.js';
import { type HeaderMode } from '../transports/http-headers.js';
import { type FieldList } from '../policy/known-fields.js';
import { type ResolvedTelemetry, type TelemetryOptions } from '../telemetry/telemetry-options.js';
import { type Duration } from '../policy/rate-limit.policy.js';
import {
  type Clock,
  type RateLimitDecision,
  type RateLimitStore,
  type StoreErrorHandler,
  type StoreErrorPolicy,
} from '../store-contract/store.interface.js';

/**
 * An ioredis or iovalkey `Redis` or `Cluster`; a node-redis client or cluster (`createClient()`,
 * `createCluster()`, v5 or later), unconnected (the module connects it) or connected; ioredis
 * options; or a `redis://` URL. Options and URLs create an ioredis client.
 */
export type RedisConnection = RedisClient | RedisOptions | string;

/** A hook that sees a decision on a route; cheap to leave unset. */
export type DecisionHook = (context: ExecutionContext, decision: RateLimitDecision) => void;

/** Options for `RateLimitModule.forRoot()` and the factories of `forRootAsync()`. */
export interface RateLimitModuleOptions {
  /**
   * Where shared state lives: an ioredis, iovalkey, node-redis or Valkey GLIDE client, ioredis
   * options, or a URL (which creates an ioredis client). A client you pass connected stays open on
   * shutdown; one the module creates, or one it connects because it came unconnected (node-redis,
   * GLIDE with `lazyConnect`), is closed. The
   * application starts whether Redis is up or not. Omit both `redis` and `store` for the
   * in-memory store.
   *
   * @example
   * ```ts
   * RateLimitModule.forRoot({ redis: process.env.REDIS_URL });
   * RateLimitModule.forRoot({ redis: new Cluster([{ host: 'redis-1', port: 6379 }]) });
   * // node-redis: hand it over unconnected, and the module connects it in the background
   * RateLimitModule.forRootAsync({
   *   useFactory: () => ({ redis: createClient({ url: process.env.REDIS_URL }) }),
   * });
   * // Valkey GLIDE: lazyConnect lets the application start while the server is down
   * RateLimitModule.forRootAsync({
   *   useFactory: async () => ({
   *     redis: await GlideClient.createClient({
   *       addresses: [{ host: 'localhost', port: 6379 }],
   *       lazyConnect: true,
   *       requestTimeout: 2000,
   *     }),
   *   }),
   * });
   * ```
   */
  redis?: RedisConnection;
  /** A custom store instead of `redis`. */
  store?: RateLimitStore;
  /** Prefix of every key. Default `'rate-limit'`. */
  keyPrefix?: string;
  /**
   * Who a request counts against. Default: `req.user.id`, else `req.user.sub`, else the client
   * IP (honouring Express `trust proxy`).
   */
  getTracker?: (context: ExecutionContext) => string | Promise<string>;
  /** Rate-limit headers on limited routes. Default `'ietf'`. */
  headers?: HeaderMode;
  /** `message` of the 429 body. Default `'Too Many Requests'`. */
  errorMessage?: string;
  /** IPv6 clients are grouped by this prefix length. Default 64. */
  ipv6Subnet?: number;
  /**
   * Test clock in milliseconds for the stores the module creates. Tests only: in production the
   * Redis store reads Redis `TIME`, one clock for every instance.
   */
  clock?: Clock;
  /**
   * Longest wait for Redis (or a custom store) per decision, in ms; past it, `onStoreError`
   * answers. Default 100.
   */
  timeout?: number;
  /**
   * Longest wait, in ms, for a promise that one of your functions returns: `getTracker`, a
   * policy's `tracker`, a dynamic `threshold`, `period` or `cost`. Past it, the value counts as
   * missing and the request is answered as `onStoreError` says. A function that returns a plain
   * value is not timed. Default 1000.
   *
   * @example
   * ```ts
   * RateLimitModule.forRoot({ functionTimeout: 250 });
   * ```
   */
  functionTimeout?: number;
  /**
   * What answers while the store fails or is too slow: `'memory'` keeps limiting per instance in
   * memory, `'allow'` lets every request through, `'deny'` answers 503 with `Retry-After`.
   * A function is told each error and returns one of those (see {@link StoreErrorHandler}).
   * Default `'memory'`. A policy's own `onStoreError` overrides it for that policy; on a call
   * with several policies the strictest answer wins (`'deny'`, then `'memory'`, then `'allow'`).
   *
   * @example
   * ```ts
   * onStoreError: (error) => {
   *   storeErrors.inc({ name: error.name });
   *   return 'memory';
   * }
   * ```
   */
  onStoreError?: StoreErrorPolicy | StoreErrorHandler;
  /**
   * Once a key is rejected with a retry-after, reject it in this instance until then without
   * asking the store. Rejections change nothing in the store, so no decision differs; a flood
   * from one client then costs one store call per retry window. Default `true`.
   */
  blockCache?: boolean;
  /**
   * Called after every decision on a limited route, allowed or not (not for skipped requests).
   * Errors it throws are logged, never passed to the request.
   */
  onDecision?: DecisionHook;
  /** Called for each rejected request, before the 429 is sent. Errors are logged, as above. */
  onLimited?: DecisionHook;
  /**
   * Requests for which it returns `true` are not counted at all, e.g. an allow-list of
   * internal callers.
   *
   * @example
   * ```ts
   * skipIf: (ctx) => ctx.switchToHttp().getRequest().headers['x-internal'] === secret
   * ```
   */
  skipIf?: (context: ExecutionContext) => boolean | Promise<boolean>;
  /**
   * Most heap the memory store's keys may take (as the store, or as the fallback), in bytes, by
   * its estimate of each key; past it the least recently written keys are dropped. At most the
   * process's heap limit. Default: a quarter of the heap limit
   * (`v8.getHeapStatistics().heap_size_limit`, set by `--max-old-space-size`).
   *
   * @example
   * ```ts
   * maxMemoryBytes: 512 * 1024 * 1024
   * ```
   */
  maxMemoryBytes?: number;
  /**
   * Most keys the memory store holds, on top of `maxMemoryBytes`. Default: no cap but
   * `maxMemoryBytes`.
   */
  maxMemoryKeys?: number;
  /**
   * Every policy in shadow mode: evaluated and recorded as if enforced, but no request is turned
   * away; `onLimited` is told of those that would have been, with `decision.shadow === true`.
   * Default `false`.
   */
  shadow?: boolean;
  /**
   * Metrics and trace spans through `@opentelemetry/api`, when it is installed: decisions by
   * outcome, store call and wait durations, leases, block-cache answers and store state changes,
   * recorded by the `MeterProvider` and `TracerProvider` your OpenTelemetry SDK registers (the
   * meter provider before the application is created). `false` turns it off; an object sets
   * `nearLimit`. Default `true`. See docs/operations.md.
   *
   * @example
   * ```ts
   * RateLimitModule.forRoot({ redis: process.env.REDIS_URL, telemetry: { nearLimit: 0.2 } });
   * ```
   */
  telemetry?: boolean | TelemetryOptions;
  /**
   * How often each instance reads the limit overrides (`RateLimitService.override`) again, besides
   * when it is told of a change: the longest an instance that missed a change notice keeps the
   * old limits. A number means seconds. Default `'5s'`; from `'100ms'` to `'1h'`.
   *
   * @example
   * ```ts
   * RateLimitModule.forRoot({ redis: process.env.REDIS_URL, overrideRefresh: '2s' });
   * ```
   */
  overrideRefresh?: Duration;
}

/**
 * Every field of {@link RateLimitModuleOptions}; any other is rejected as a typo. A field added to
 * the interface must be added here too, or this does not compile.
 */
export const MODULE_OPTION_FIELDS = {
  redis: true,
  store: true,
  keyPrefix: true,
  getTracker: true,
  headers: true,
  errorMessage: true,
  ipv6Subnet: true,
  clock: true,
  timeout: true,
  functionTimeout: true,
  onStoreError: true,
  blockCache: true,
  onDecision: true,
  onLimited: true,
  skipIf: true,
  maxMemoryBytes: true,
  maxMemoryKeys: true,
  shadow: true,
  telemetry: true,
  overrideRefresh: true,
} as const satisfies FieldList<RateLimitModuleOptions>;

/** `forRoot()` options: the module options plus whether the guard is global. */
export interface RateLimitRootOptions extends RateLimitModuleOptions {
  /** Register `RateLimitGuard` as a global guard. Default `true`. */
  globalGuard?: boolean;
}

/** A class that creates the options, for `forRootAsync({ useClass })`. */
export interface RateLimitOptionsFactory {
  createRateLimitOptions(): RateLimitModuleOptions | Promise<RateLimitModuleOptions>;
}

/** `forRootAsync()` options. */
export interface RateLimitModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  // Nest's own provider typing: injected values arrive as `any`.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  useFactory?: (...args: any[]) => RateLimitModuleOptions | Promise<RateLimitModuleOptions>;
  inject?: Array<string | symbol | Type<unknown>>;
  useClass?: Type<RateLimitOptionsFactory>;
  useExisting?: Type<RateLimitOptionsFactory>;
  /** Register `RateLimitGuard` as a global guard. Default `true`. */
  globalGuard?: boolean;
}

/** Every field of {@link RateLimitModuleAsyncOptions}. */
export const ASYNC_OPTION_FIELDS = {
  imports: true,
  useFactory: true,
  inject: true,
  useClass: true,
  useExisting: true,
  globalGuard: true,
} as const satisfies FieldList<RateLimitModuleAsyncOptions>;

/** Module options after validation; what the guard and service read. */
export interface ResolvedRateLimitOptions {
  readonly keyPrefix: string;
  readonly getTracker: RateLimitModuleOptions['getTracker'];
  readonly headers: HeaderMode;
  readonly errorMessage: string;
  readonly ipv6Subnet: number;
  readonly timeout: number;
  readonly functionTimeout: number;
  readonly onStoreError: StoreErrorPolicy | StoreErrorHandler;
  readonly maxMemoryBytes: number;
  readonly maxMemoryKeys: number | undefined;
  readonly blockCache: boolean;
  readonly onDecision: DecisionHook | undefined;
  readonly onLimited: DecisionHook | undefined;
  readonly skipIf: RateLimitModuleOptions['skipIf'];
  readonly shadow: boolean;
  readonly telemetry: ResolvedTelemetry;
  readonly overrideRefreshMs: number;
}

import {
  type DynamicModule,
  Global,
  Inject,
  Logger,
  Module,
  type OnApplicationShutdown,
  type Provider,
} from '@nestjs/common';
import { APP_GUARD, DiscoveryModule, DiscoveryService, MetadataScanner } from '@nestjs/core';
import {
  RATE_LIMIT_ACTIVITY,
  RATE_LIMIT_CLOCK,
  RATE_LIMIT_CALL_STORE,
  RATE_LIMIT_OPTIONS,
  RATE_LIMIT_RAW_OPTIONS,
  RATE_LIMIT_STORE_HANDLE,
  RATE_LIMIT_TELEMETRY,
} from '../rate-limit.constants.js';
import { LeaseKeeper } from '../flow/lease-keeper.js';
import { RateLimitHealthIndicator } from '../health/rate-limit.health.js';
import { RateLimitGuard } from '../route/rate-limit.guard.js';
import {
  ASYNC_OPTION_FIELDS,
  MODULE_OPTION_FIELDS,
  type RateLimitModuleAsyncOptions,
  type RateLimitModuleOptions,
  type RateLimitOptionsFactory,
  type RateLimitRootOptions,
  type ResolvedRateLimitOptions,
} from '../options/rate-limit.options.js';
import { resolveOptions } from '../options/resolve-options.js';
import { configError } from '../policy/validation.js';
import { checkFields, knownFields } from '../policy/known-fields.js';
import { RateLimitService } from '../service/rate-limit.service.js';
import { createStore, type StoreHandle } from './store-factory.js';
import { adaptStore } from '../stores/method-store.js';
import { type Clock, RateLimitStore } from '../store-contract/store.interface.js';
import { PendingOutcomes } from '../transports/pending-outcomes.js';
import { type RateLimitTelemetry } from '../telemetry/rate-limit-telemetry.js';
import { telemetryProvider } from './telemetry-provider.js';
import { KnownPolicies } from '../overrides/known-policies.js';
import { OverrideRegistry } from '../overrides/override-registry.js';
import { DecisionFeed } from '../activity/decision-feed.js';
import { CONNECT_TIMEOUT_MS } from './redis-link.js';

// A module option given to forRootAsync() itself belongs in what its factory returns.
const ASYNC_FIELDS = knownFields(
  ASYNC_OPTION_FIELDS,
  Object.fromEntries(
    Object.keys(MODULE_OPTION_FIELDS).map((field) => [
      field,
      `${field} belongs in the options useFactory (or createRateLimitOptions) returns`,
    ]),
  ),
);

const derivedProviders: Provider[] = [
  {
    provide: RATE_LIMIT_OPTIONS,
    useFactory: (raw: RateLimitModuleOptions) => resolveOptions(raw),
    inject: [RATE_LIMIT_RAW_OPTIONS],
  },
  telemetryProvider,
  {
    // A provider of its own, not read from the options, so that a test can replace it alone.
    provide: RATE_LIMIT_CLOCK,
    useFactory: (raw: RateLimitModuleOptions) => raw.clock ?? null,
    inject: [RATE_LIMIT_RAW_OPTIONS],
  },
  {
    provide: RATE_LIMIT_STORE_HANDLE,
    // Depends on the resolved options so invalid options fail before any client is created.
    useFactory: (
      raw: RateLimitModuleOptions,
      options: ResolvedRateLimitOptions,
      telemetry: RateLimitTelemetry,
      clock: unknown,
    ) =>
      createStore({ ...raw, clock: clockFrom(clock) }, options, new Logger('RateLimit'), telemetry),
    inject: [RATE_LIMIT_RAW_OPTIONS, RATE_LIMIT_OPTIONS, RATE_LIMIT_TELEMETRY, RATE_LIMIT_CLOCK],
  },
  {
    provide: RateLimitStore,
    useFactory: (handle: StoreHandle) => handle.store,
    inject: [RATE_LIMIT_STORE_HANDLE],
  },
  {
    provide: RATE_LIMIT_CALL_STORE,
    // The module's own chain, unless a test put a store of its own in place of RateLimitStore.
    useFactory: (store: RateLimitStore, handle: StoreHandle) =>
      store === handle.store ? handle.chain : adaptStore(store),
    inject: [RateLimitStore, RATE_LIMIT_STORE_HANDLE],
  },
  {
    provide: OverrideRegistry,
    useFactory: (handle: StoreHandle, options: ResolvedRateLimitOptions) =>
      new OverrideRegistry(
        handle.overrides(),
        new KnownPolicies(),
        options.overrideRefreshMs,
        new Logger('RateLimit'),
      ),
    inject: [RATE_LIMIT_STORE_HANDLE, RATE_LIMIT_OPTIONS],
  },
  {
    provide: RATE_LIMIT_ACTIVITY,
    useFactory: (handle: StoreHandle) => handle.activity(),
    inject: [RATE_LIMIT_STORE_HANDLE],
  },
  { provide: DecisionFeed, useFactory: () => new DecisionFeed() },
  LeaseKeeper,
  PendingOutcomes,
  RateLimitGuard,
  RateLimitService,
  RateLimitHealthIndicator,
];

/**
 * The clock `RATE_LIMIT_CLOCK` holds, which a test may have replaced: a function, or an object
 * with `now()` such as a `TestClock`.
 */
function clockFrom(value: unknown): Clock | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'function') return value as Clock;
  const now = (value as { now?: unknown }).now;
  if (typeof now === 'function') return () => now.call(value) as number;
  throw configError(
    'RATE_LIMIT_CLOCK',
    'value',
    value,
    'a function returning milliseconds, or an object with now()',
  );
}

// The lease keeper and pending outcomes too: a `@UseGuards(RateLimitGuard)` in another module
// builds the guard there, and `RateLimitInterceptor` is built in each handler's own module.
const exported = [
  RATE_LIMIT_OPTIONS,
  RATE_LIMIT_TELEMETRY,
  RateLimitStore,
  RATE_LIMIT_CALL_STORE,
  LeaseKeeper,
  PendingOutcomes,
  OverrideRegistry,
  RATE_LIMIT_ACTIVITY,
  DecisionFeed,
  RateLimitGuard,
  RateLimitService,
  RateLimitHealthIndicator,
];

/**
 * Rate limiting for a Nest application, shared by every instance through Redis or kept in
 * memory. The module is global: import it once, in the root module.
 *
 * @example
 * ```ts
 * @Module({
 *   imports: [RateLimitModule.forRoot({ redis: process.env.REDIS_URL })],
 *   controllers: [HelloController],
 * })
 * export class AppModule {}
 * ```
 */
@Global()
@Module({})
export class RateLimitModule implements OnApplicationShutdown {
  private readonly logger = new Logger('RateLimit');

  constructor(
    @Inject(RATE_LIMIT_STORE_HANDLE) private readonly handle: StoreHandle,
    private readonly leases: LeaseKeeper,
    private readonly overrides: OverrideRegistry,
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {}

  /** Configures the module from static options. */
  static forRoot(options: RateLimitRootOptions = {}): DynamicModule {
    const { globalGuard, ...moduleOptions } = options;
    // A list, as @nestjs/throttler's forRoot() takes, goes on as it is, for bootstrap to refuse.
    const raw = Array.isArray(options) ? options : moduleOptions;
    return this.assemble([{ provide: RATE_LIMIT_RAW_OPTIONS, useValue: raw }], [], globalGuard);
  }

  /**
   * Configures the module from options created at bootstrap, e.g. from `ConfigService`.
   *
   * @example
   * ```ts
   * RateLimitModule.forRootAsync({
   *   imports: [ConfigModule],
   *   inject: [ConfigService],
   *   useFactory: (config: ConfigService) => ({ redis: config.get('REDIS_URL') }),
   * });
   * ```
   */
  static forRootAsync(options: RateLimitModuleAsyncOptions): DynamicModule {
    const where = 'RateLimitModule.forRootAsync';
    if (options !== null && typeof options === 'object') checkFields(options, ASYNC_FIELDS, where);
    const ways = [options?.useFactory, options?.useClass, options?.useExisting].filter(Boolean);
    if (ways.length !== 1) {
      throw configError(
        where,
        'options',
        `${ways.length} of them`,
        'exactly one of useFactory, useClass, useExisting',
      );
    }
    const providers: Provider[] = [];
    if (options.useFactory) {
      providers.push({
        provide: RATE_LIMIT_RAW_OPTIONS,
        useFactory: options.useFactory,
        inject: options.inject ?? [],
      });
    } else {
      const factoryClass = (options.useClass ?? options.useExisting)!;
      if (options.useClass) providers.push({ provide: factoryClass, useClass: factoryClass });
      providers.push({
        provide: RATE_LIMIT_RAW_OPTIONS,
        useFactory: (factory: RateLimitOptionsFactory) => factory.createRateLimitOptions(),
        inject: [factoryClass],
      });
    }
    return this.assemble(providers, options.imports ?? [], options.globalGuard);
  }

  private static assemble(
    optionProviders: Provider[],
    imports: NonNullable<DynamicModule['imports']>,
    globalGuard = true,
  ): DynamicModule {
    const providers = [...optionProviders, ...derivedProviders];
    if (globalGuard) providers.push({ provide: APP_GUARD, useExisting: RateLimitGuard });
    return {
      module: RateLimitModule,
      global: true,
      imports: [DiscoveryModule, ...imports],
      providers,
      exports: exported,
    };
  }

  /**
   * Lets a Redis client connect before requests arrive, bounded by its connect timeout: without
   * Redis the application starts all the same, on the fallback. Then the limit overrides in
   * force are read, bounded the same way (they are read again on the refresh period).
   */
  async onModuleInit(): Promise<void> {
    await this.handle.ready();
    this.overrides.known.scan(this.discovery, this.scanner);
    await this.overrides.start(CONNECT_TIMEOUT_MS);
  }

  onApplicationBootstrap(): void {
    const message = this.handle.startedMessage();
    if (message !== undefined) this.logger.log(message);
  }

  async onApplicationShutdown(): Promise<void> {
    // Leases first, while the store can still free them for the other instances.
    await this.leases.close();
    await this.overrides.close();
    await this.handle.close();
  }
}

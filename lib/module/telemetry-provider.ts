import { type Provider } from '@nestjs/common';
import {
  RATE_LIMIT_OPTIONS,
  RATE_LIMIT_RAW_OPTIONS,
  RATE_LIMIT_TELEMETRY,
} from '../rate-limit.constants.js';
import { MemoryStore } from '../stores/memory/memory.store.js';
import { RedisStore } from '../stores/redis/redis.store.js';
import { loadTelemetry } from '../telemetry/load-telemetry.js';
import { type StoreKind } from '../telemetry/rate-limit-telemetry.js';
import {
  type RateLimitModuleOptions,
  type ResolvedRateLimitOptions,
} from '../options/rate-limit.options.js';

/** The store the options describe, as the `rate_limit.store` attribute names it. */
export function storeKindOf(raw: RateLimitModuleOptions): StoreKind {
  const { store, redis } = raw;
  if (store instanceof MemoryStore) return 'memory';
  if (store instanceof RedisStore) return 'redis';
  if (store !== undefined) return 'custom';
  return redis === undefined ? 'memory' : 'redis';
}

/**
 * The module's telemetry, resolved as the module starts: `@opentelemetry/api` is loaded then, if
 * it is installed and the `telemetry` option leaves it on.
 */
export const telemetryProvider: Provider = {
  provide: RATE_LIMIT_TELEMETRY,
  useFactory: (raw: RateLimitModuleOptions, options: ResolvedRateLimitOptions) =>
    loadTelemetry(options.telemetry, storeKindOf(raw)),
  inject: [RATE_LIMIT_RAW_OPTIONS, RATE_LIMIT_OPTIONS],
};

// The public API of `nest-rate-limit`: what an app writes in its own code. Every name here is
// documented in README.md or docs/ (docs/api.md lists them; `npm run docs:check` fails on one
// that is not, and on more than 45 names across this entry and `nest-rate-limit/testing`).
// Everything else (the store wrappers the module builds, client plumbing, resolved forms,
// message constants, store error classes, told apart by `error.name`) stays internal.
export { RateLimitModule } from './module/rate-limit.module.js';
export { RateLimit, SkipRateLimit } from './route/rate-limit.decorator.js';
export { RateLimitGuard } from './route/rate-limit.guard.js';
export { RateLimitInterceptor } from './route/rate-limit.interceptor.js';
export { RateLimitService } from './service/rate-limit.service.js';
export { requestOf, userOf } from './transports/request-and-user.js';
export { RateLimitHealthIndicator } from './health/rate-limit.health.js';
export {
  type AcquireOptions,
  type ConsumeOptions,
  type ReserveOptions,
  type RunOptions,
} from './service/service-options.js';
export { type RateLimitReservation } from './service/reservation.js';
export { type RateLimitPermit } from './service/permit.js';
export { type OverrideLimit, type OverrideOptions } from './overrides/overridden-policy.js';
export { type OverrideInForce } from './overrides/override-commands.js';
export { RateLimitException, GraphQLRateLimitError } from './rate-limit.exception.js';
export { type RateLimitErrorPayload } from './transports/error-payload.js';
export {
  type RateLimitModuleOptions,
  type RateLimitOptionsFactory,
  type RedisConnection,
} from './options/rate-limit.options.js';
export {
  type Duration,
  type RateLimitPolicy,
  type ResolvedPolicy,
} from './policy/rate-limit.policy.js';
export { RateLimitConfigError } from './policy/validation.js';
export { type RoutePolicy } from './templates/route-policy.js';
export { type Algorithm } from './algorithms/algorithm.js';
export {
  RateLimitStore,
  type RateLimitDecision,
  type PolicyDecision,
} from './store-contract/store.interface.js';
export { UserFunctionError, UserFunctionTimeoutError } from './templates/user-functions.js';
export { RedisStore } from './stores/redis/redis.store.js';
export { MemoryStore } from './stores/memory/memory.store.js';

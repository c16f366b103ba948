export { RateLimitModule } from './module/rate-limit.module.js';
export { RateLimit, SkipRateLimit } from './route/rate-limit.decorator.js';
export { RateLimitGuard } from './route/rate-limit.guard.js';
export { RateLimitInterceptor } from './route/rate-limit.interceptor.js';
export { RateLimitService } from './service/rate-limit.service.js';
export { requestOf, userOf } from './transports/request-and-user.js';
export {
  RateLimitHealthIndicator,
  type RateLimitHealthDetails,
  type RateLimitHealthResult,
} from './health/rate-limit.health.js';
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
export {
  RateLimitException,
  GraphQLRateLimitError,
  type GraphQLRateLimitExtensions,
  COST_TOO_HIGH_MESSAGE,
  STORE_UNAVAILABLE_MESSAGE,
} from './rate-limit.exception.js';
export { type RateLimitErrorPayload } from './transports/error-payload.js';
export { RATE_LIMIT_OPTIONS } from './rate-limit.constants.js';
export {
  type RateLimitModuleOptions,
  type RateLimitRootOptions,
  type RateLimitModuleAsyncOptions,
  type RateLimitOptionsFactory,
  type ResolvedRateLimitOptions,
  type RedisConnection,
  type DecisionHook,
} from './options/rate-limit.options.js';
export {
  type Duration,
  type Dynamic,
  type DynamicResult,
  type RateLimitPolicy,
  type ResolvedPolicy,
} from './policy/rate-limit.policy.js';
export { RateLimitConfigError } from './policy/validation.js';
export { type CountMode, type RoutePolicy, type RouteScope } from './templates/route-policy.js';
export { type Algorithm, type RateAlgorithm } from './algorithms/algorithm.js';
export { type HeaderMode } from './transports/http-headers.js';
export {
  RateLimitStore,
  type RateLimitDecision,
  type PolicyDecision,
  type Clock,
  type StoreErrorPolicy,
  type StoreErrorHandler,
} from './store-contract/store.interface.js';
export { ResilientStore, type ResilientStoreOptions } from './stores/resilience/resilient.store.js';
export { StoreTimeoutError } from './stores/resilience/deadlines.js';
export { StoreCallError } from './stores/resilience/store-failure.js';
export {
  UserFunctionError,
  UserFunctionTimeoutError,
  type UserFunction,
} from './templates/user-functions.js';
export {
  type MemoryPolicy,
  RedisStore,
  type RedisStoreOptions,
} from './stores/redis/redis.store.js';
export { type RedisClient } from './stores/redis/clients/redis-client.js';
export { type IovalkeyClient } from './stores/redis/clients/ioredis.client.js';
export {
  type GlideCommandOptions,
  type GlideRoute,
  type ValkeyGlideClient,
} from './stores/redis/clients/glide.client.js';
export { StoreNotConnectedError } from './stores/redis/clients/script-client.js';
export { BatchedDecisionError } from './stores/redis/decisions/decision-batcher.js';
export { StoreLateError } from './stores/redis/answer-deadline.js';
export {
  type NodeRedisClient,
  type NodeRedisEvalOptions,
} from './stores/redis/clients/node-redis.client.js';
export { MemoryStore, type MemoryStoreOptions } from './stores/memory/memory.store.js';

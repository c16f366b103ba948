import { Logger, Module } from '@nestjs/common';
import { RateLimitModule, type RedisConnection } from 'nest-rate-limit';
import { createClient } from 'redis';
import { AuthController } from './auth.controller.js';
import { ExportsController } from './exports.controller.js';
import { HelloController } from './hello.controller.js';
import { ItemsController } from './items.controller.js';
import { countDecision, MetricsController } from './metrics.js';
import { PartnerQuotes } from './partner-quotes.service.js';
import { QuotesController } from './quotes.controller.js';

/**
 * `REDIS_URL` shares the limits through Redis, with an ioredis client the module creates;
 * `REDIS_CLIENT=node-redis` hands it a node-redis client instead. Neither: memory.
 */
function redisConnection(logger: Logger): RedisConnection | undefined {
  const url = process.env.REDIS_URL;
  if (!url) {
    logger.log('Rate limits are kept in memory; set REDIS_URL to share them through Redis');
    return undefined;
  }
  const nodeRedis = process.env.REDIS_CLIENT === 'node-redis';
  // Log the host only: a URL may carry a password.
  logger.log(
    `Rate limits are shared through Redis at ${new URL(url).host} (${nodeRedis ? 'node-redis' : 'ioredis'})`,
  );
  // Unconnected: the module connects it in the background, so the app starts without Redis.
  return nodeRedis ? createClient({ url }) : url;
}

@Module({
  imports: [
    RateLimitModule.forRootAsync({
      useFactory: () => {
        const redis = redisConnection(new Logger('Sample'));
        return { ...(redis ? { redis } : {}), onDecision: countDecision };
      },
    }),
  ],
  controllers: [
    HelloController,
    ItemsController,
    AuthController,
    ExportsController,
    QuotesController,
    MetricsController,
  ],
  providers: [PartnerQuotes],
})
export class AppModule {}

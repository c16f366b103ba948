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
async function redisConnection(logger: Logger): Promise<RedisConnection | undefined> {
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
  if (!nodeRedis) return url;
  const client = createClient({ url });
  client.on('error', (error: Error) => logger.warn(`Redis: ${error.message}`));
  return client.connect();
}

@Module({
  imports: [
    RateLimitModule.forRootAsync({
      useFactory: async () => {
        const redis = await redisConnection(new Logger('Sample'));
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

import { Logger, Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { RateLimitModule, type RedisConnection } from 'nest-rate-limit';
import { RateLimitConsoleModule } from 'nest-rate-limit/console';
import { createClient } from 'redis';
import { AdminLimitsController } from './admin-limits.controller.js';
import { AuthController } from './auth.controller.js';
import { ChatController } from './chat.controller.js';
import { ConsoleGuard } from './console.guard.js';
import { ExportsController } from './exports.controller.js';
import { FakeModel } from './fake-model.js';
import { HealthController } from './health.controller.js';
import { HelloController } from './hello.controller.js';
import { ItemsController } from './items.controller.js';
import { MetricsController } from './metrics.js';
import { PartnerQuotes } from './partner-quotes.service.js';
import { QuotesController } from './quotes.controller.js';

/**
 * `REDIS_URL` shares the limits through Redis, with an ioredis client the module creates;
 * `REDIS_CLIENT=node-redis` or `REDIS_CLIENT=glide` hands it a node-redis or Valkey GLIDE client
 * instead. Neither: memory.
 */
async function redisConnection(logger: Logger): Promise<RedisConnection | undefined> {
  const url = process.env.REDIS_URL;
  if (!url) {
    logger.log('Rate limits are kept in memory; set REDIS_URL to share them through Redis');
    return undefined;
  }
  const client =
    process.env.REDIS_CLIENT === 'node-redis' || process.env.REDIS_CLIENT === 'glide'
      ? process.env.REDIS_CLIENT
      : 'ioredis';
  // Log the host only: a URL may carry a password.
  logger.log(`Rate limits are shared through Redis at ${new URL(url).host} (${client})`);
  // Unconnected: the module connects it in the background, so the app starts without Redis.
  if (client === 'node-redis') return createClient({ url });
  if (client === 'glide') return glideClient(url);
  return url;
}

/**
 * A Valkey GLIDE client for `url`, with `lazyConnect` so that the module connects it in the
 * background. Loaded only when asked for: the sample runs without `@valkey/valkey-glide`.
 */
async function glideClient(url: string): Promise<RedisConnection> {
  const { GlideClient } = await import('@valkey/valkey-glide');
  const { hostname, port, username, password, protocol } = new URL(url);
  return GlideClient.createClient({
    addresses: [{ host: hostname, port: Number(port || 6379) }],
    credentials: password
      ? { username: username || undefined, password: decodeURIComponent(password) }
      : undefined,
    useTLS: protocol === 'rediss:',
    lazyConnect: true,
    // Longer than the module's timeout: the store bounds each decision itself.
    requestTimeout: 2000,
  });
}

@Module({
  imports: [
    TerminusModule,
    RateLimitModule.forRootAsync({
      useFactory: async () => {
        const redis = await redisConnection(new Logger('Sample'));
        // Metrics and traces go through OpenTelemetry (telemetry is on by default): see metrics.ts.
        return redis ? { redis } : {};
      },
    }),
    // The console for the people on call, at /rate-limits, behind the admin token.
    RateLimitConsoleModule.forRoot({ guard: ConsoleGuard }),
  ],
  controllers: [
    HelloController,
    ItemsController,
    AuthController,
    ExportsController,
    QuotesController,
    MetricsController,
    HealthController,
    AdminLimitsController,
    ChatController,
  ],
  providers: [PartnerQuotes, FakeModel],
})
export class AppModule {}

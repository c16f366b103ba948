import { Logger, Module } from '@nestjs/common';
import { RateLimitModule } from 'nest-rate-limit';
import { HelloController } from './hello.controller.js';
import { ItemsController } from './items.controller.js';
import { countDecision, MetricsController } from './metrics.js';

@Module({
  imports: [
    RateLimitModule.forRootAsync({
      useFactory: () => {
        const redis = process.env.REDIS_URL;
        const logger = new Logger('Sample');
        // Log the host only: a URL may carry a password.
        if (redis) logger.log(`Rate limits are shared through Redis at ${new URL(redis).host}`);
        else
          logger.log('Rate limits are kept in memory; set REDIS_URL to share them through Redis');
        return { ...(redis ? { redis } : {}), onDecision: countDecision };
      },
    }),
  ],
  controllers: [HelloController, ItemsController, MetricsController],
})
export class AppModule {}

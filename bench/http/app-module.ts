/** The benchmark's Nest module: one route, and the limiter a configuration names. */
import {
  Controller,
  type DynamicModule,
  type ExecutionContext,
  Get,
  Injectable,
  Module,
  type Provider,
} from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import { ThrottlerGuard, ThrottlerModule } from '@nestjs/throttler';
import { RateLimit, RateLimitModule, type RateLimitDecision } from '../../lib/index.js';
import { CLIENT_HEADER, type Config, LIMIT_PERIOD_MS, LIMIT_THRESHOLD } from './workload.js';

interface RequestWithHeaders {
  headers: Record<string, string | string[] | undefined>;
}

const clientIdOf = (request: RequestWithHeaders) => String(request.headers[CLIENT_HEADER]);

// The decorator only stores metadata, so it is harmless in the configurations without our module.
@Controller('bench')
class PingController {
  @RateLimit({ period: LIMIT_PERIOD_MS / 1000, threshold: LIMIT_THRESHOLD })
  @Get('ping')
  ping() {
    return { ok: true };
  }
}

/** @nestjs/throttler keyed by the same header as ours, instead of the client IP. */
@Injectable()
class ClientIdThrottlerGuard extends ThrottlerGuard {
  protected override async getTracker(request: RequestWithHeaders): Promise<string> {
    return clientIdOf(request);
  }
}

/**
 * Decisions our Redis store could not make in time and answered from memory instead: a row
 * measured that way would not be measuring Redis, so the app reports the count when it stops.
 */
export const degraded = { count: 0 };
const countDegraded = (_context: ExecutionContext, decision: RateLimitDecision) => {
  if (decision.degraded !== undefined) degraded.count++;
};

function limiterImports(config: Config, redisUrl: string): DynamicModule[] {
  const getTracker = (context: ExecutionContext) =>
    clientIdOf(context.switchToHttp().getRequest<RequestWithHeaders>());
  const throttlers = [{ ttl: LIMIT_PERIOD_MS, limit: LIMIT_THRESHOLD }];
  switch (config) {
    case 'no limiter':
      return [];
    case 'ours (Redis)':
      return [RateLimitModule.forRoot({ redis: redisUrl, getTracker, onDecision: countDegraded })];
    case 'ours (memory)':
      return [RateLimitModule.forRoot({ getTracker })];
    case '@nestjs/throttler (memory)':
      return [ThrottlerModule.forRoot({ throttlers })];
    case '@nestjs/throttler + @nest-lab Redis':
      return [
        ThrottlerModule.forRoot({
          throttlers,
          storage: new ThrottlerStorageRedisService(redisUrl),
        }),
      ];
  }
}

export function benchModule(config: Config, redisUrl: string): DynamicModule {
  const guards: Provider[] = config.startsWith('@nestjs/throttler')
    ? [{ provide: APP_GUARD, useClass: ClientIdThrottlerGuard }]
    : [];
  @Module({})
  class BenchModule {}
  return {
    module: BenchModule,
    imports: limiterImports(config, redisUrl),
    controllers: [PingController],
    providers: guards,
  };
}

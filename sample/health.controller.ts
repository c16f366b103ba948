import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { RateLimitHealthIndicator, SkipRateLimit } from 'nest-rate-limit';

/**
 * `GET /health` through Terminus: 200 while decisions are answered (by Redis, or by the memory
 * fallback while Redis is away, which the details say), 503 where they would be denied.
 * Not limited itself, so that probes are never turned away.
 */
@SkipRateLimit()
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly rateLimit: RateLimitHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.rateLimit.isHealthy('rate-limit')]);
  }
}

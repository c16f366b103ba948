import {
  BadRequestException,
  Body,
  type CanActivate,
  Controller,
  Delete,
  type ExecutionContext,
  Get,
  HttpCode,
  Injectable,
  Param,
  Post,
  Query,
  UseGuards,
} from '@nestjs/common';
import { timingSafeEqual } from 'node:crypto';
import { RateLimitConfigError, RateLimitService } from 'nest-rate-limit';

/** Whether `given` is `$ADMIN_TOKEN`, compared in constant time; never while it is unset. */
export function isAdminToken(given: unknown): boolean {
  const expected = process.env.ADMIN_TOKEN;
  if (!expected || typeof given !== 'string') return false;
  const [a, b] = [Buffer.from(given), Buffer.from(expected)];
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Lets a request through only with `X-Admin-Token: $ADMIN_TOKEN`; none at all while it is unset. */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<{ headers: Record<string, unknown> }>();
    return isAdminToken(request.headers['x-admin-token']);
  }
}

interface LimitBody {
  threshold: number;
  period?: string;
  burst?: number;
  tracker?: string;
  ttl?: string;
}

/**
 * Changes limits at runtime, on every instance sharing the Redis, e.g.
 * `curl -X POST -H "X-Admin-Token: $ADMIN_TOKEN" -H 'Content-Type: application/json'
 * -d '{"threshold":10,"ttl":"1h"}' localhost:3000/admin/limits/2-per-30s`.
 */
@UseGuards(AdminTokenGuard)
@Controller('admin/limits')
export class AdminLimitsController {
  constructor(private readonly rateLimit: RateLimitService) {}

  @Get()
  list() {
    return this.rateLimit.overrides();
  }

  @Post(':policy')
  async override(@Param('policy') policy: string, @Body() body: LimitBody) {
    const { tracker, ttl, ...limit } = body;
    await refusalsAsBadRequest(() => this.rateLimit.override(policy, limit, { tracker, ttl }));
    return this.rateLimit.overrides();
  }

  @Delete(':policy')
  @HttpCode(200)
  async clear(@Param('policy') policy: string, @Query('tracker') tracker?: string) {
    const cleared = await refusalsAsBadRequest(() =>
      this.rateLimit.clearOverride(policy, { tracker }),
    );
    return { cleared };
  }
}

/**
 * A refused change (a value out of bounds, an unknown policy, 10,000 overrides in force) as a 400
 * whose message names the field and the bound.
 */
async function refusalsAsBadRequest<T>(change: () => Promise<T>): Promise<T> {
  try {
    return await change();
  } catch (error) {
    if (error instanceof RateLimitConfigError) throw new BadRequestException(error.message);
    throw error;
  }
}

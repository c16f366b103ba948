import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  Controller,
  type ExecutionContext,
  Get,
  type INestApplication,
  Injectable,
  type MiddlewareConsumer,
  Module,
  type NestMiddleware,
  type NestModule,
} from '@nestjs/common';
import request from 'supertest';
import {
  RateLimit,
  RateLimitModule,
  type RoutePolicy,
  requestOf,
  userOf,
} from '../../../lib/index.js';
import { MetricsController, startMetrics } from '../../../sample/metrics.js';
import { HTTP_ADAPTERS, type HttpAdapterKind, startHttpApp } from './fixtures/http-app.js';
import { uniquePrefix } from './fixtures/app.js';

// The per-plan recipe of docs/recipes.md, with limits small enough to count in a test.
const LIMITS: Record<string, number> = { free: 2, pro: 5 };

const planOf = (ctx: ExecutionContext): string => userOf(ctx)?.plan ?? 'free';

const PLAN_LIMIT: RoutePolicy = {
  name: 'plan',
  period: '1m',
  threshold: (ctx) => LIMITS[planOf(ctx)] ?? LIMITS.free,
  scope: 'app',
};

@RateLimit(PLAN_LIMIT)
@Controller('api')
class ApiController {
  @Get('things')
  things() {
    return [];
  }

  @Get('other')
  other() {
    return [];
  }
}

/** What the request and the user look like to a function of the app, on each adapter. */
@RateLimit({
  period: '1m',
  threshold: 100,
  tracker: (ctx) => `${requestOf(ctx)?.headers['x-probe'] ?? 'none'}:${userOf(ctx)?.id ?? 'none'}`,
})
@Controller('probe')
class ProbeController {
  @Get()
  probe() {
    return 'ok';
  }
}

/**
 * Authentication in middleware, as the troubleshooting page advises: `Bearer <id>:<plan>` is the
 * user. On Fastify, Nest middleware gets the raw Node request, so the user lands on `req.raw`.
 */
@Injectable()
class AuthMiddleware implements NestMiddleware {
  use(req: { headers: Record<string, unknown>; user?: unknown }, _res: unknown, next: () => void) {
    const token = req.headers.authorization;
    if (typeof token === 'string' && token.startsWith('Bearer ')) {
      const [id, plan] = token.slice('Bearer '.length).split(':');
      req.user = { id, plan };
    }
    next();
  }
}

@Module({
  imports: [RateLimitModule.forRoot({ keyPrefix: uniquePrefix() })],
  controllers: [ApiController, ProbeController, MetricsController],
})
class AppModule implements NestModule {
  configure(consumer: MiddlewareConsumer) {
    consumer.apply(AuthMiddleware).forRoutes('*');
  }
}

describe.each(HTTP_ADAPTERS)('the request and its user on %s', (adapter: HttpAdapterKind) => {
  let app: INestApplication;

  beforeAll(async () => {
    startMetrics();
    app = await startHttpApp({ imports: [AppModule] }, { adapter });
  });
  afterAll(() => app.close());

  /** Statuses of `count` requests spread over the routes that share the plan's budget. */
  async function statuses(token: string | undefined, count: number): Promise<number[]> {
    const codes: number[] = [];
    for (let i = 0; i < count; i++) {
      const call = request(app.getHttpServer()).get(i % 2 === 0 ? '/api/things' : '/api/other');
      codes.push(
        (await (token === undefined ? call : call.auth(token, { type: 'bearer' }))).status,
      );
    }
    return codes;
  }

  it('gives a pro user, authenticated in middleware, the pro limit of the per-plan recipe', async () => {
    expect(await statuses(`pro-${adapter}:pro`, 6)).toEqual([200, 200, 200, 200, 200, 429]);
  });

  it('gives a free user and an anonymous client the free limit', async () => {
    expect(await statuses(`free-${adapter}:free`, 3)).toEqual([200, 200, 429]);
    expect(await statuses(undefined, 3)).toEqual([200, 200, 429]);
  });

  it("reads the request's headers and its user from a function of the route", async () => {
    // The tracker is `<x-probe>:<user id>`: what is left of each key says which one counted.
    const remaining = async (probe: string, token?: string) => {
      const call = request(app.getHttpServer()).get('/probe').set('x-probe', probe);
      const res = await (token === undefined ? call : call.auth(token, { type: 'bearer' }));
      expect(res.status).toBe(200);
      return /;r=(\d+)/.exec(String(res.headers['ratelimit']))?.[1];
    };
    expect(await remaining('seen', 'ann:pro')).toBe('99');
    expect(await remaining('seen')).toBe('99');
    expect(await remaining('other', 'ann:pro')).toBe('99');
    expect(await remaining('seen', 'ann:free')).toBe('98');
  });

  it('serves the metrics of the sample app, in the Prometheus text format', async () => {
    await request(app.getHttpServer()).get('/api/things');
    const res = await request(app.getHttpServer()).get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(res.text).toMatch(/^# TYPE rate_limit_decisions_total counter$/m);
    expect(res.text).toContain('rate_limit_route="GET /api/things"');
  });
});

import { afterEach, describe, expect, it } from '@jest/globals';
import {
  type CanActivate,
  Controller,
  type ExecutionContext,
  Get,
  type INestApplication,
  Injectable,
  UseGuards,
} from '@nestjs/common';
import request from 'supertest';
import { RateLimit, RateLimitGuard, RateLimitModule } from '../../../lib/index.js';
import { LogCapture } from '../../transports/fixtures/log-capture.js';
import { HTTP_ADAPTERS, type HttpAdapterKind, startHttpApp } from './fixtures/http-app.js';
import { uniquePrefix } from './fixtures/app.js';

const DOCS = 'docs/troubleshooting.md#every-request-counts-against-the-ip-not-the-user';

/** An auth guard as apps write them: the bearer token names the user. */
@Injectable()
class FakeAuthGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context
      .switchToHttp()
      .getRequest<{ headers: Record<string, string | undefined>; user?: unknown }>();
    const token = req.headers.authorization?.replace(/^Bearer /, '');
    if (token === undefined) return false;
    req.user = { id: token };
    return true;
  }
}

/** The trap: the auth guard on the controller runs after the global rate-limit guard. */
@UseGuards(FakeAuthGuard)
@RateLimit({ period: 60, threshold: 3 })
@Controller('late')
class LateAuthController {
  @Get('profile')
  profile() {
    return 'me';
  }

  @Get('orders')
  orders() {
    return 'orders';
  }
}

/** Open to anyone; the rate-limit guard counts by IP, as it should. */
@RateLimit({ period: 60, threshold: 3 })
@Controller('open')
class OpenController {
  @Get()
  open() {
    return 'open';
  }
}

/** The right order, with the module's guard attached by hand after auth. */
@UseGuards(FakeAuthGuard, RateLimitGuard)
@RateLimit({ period: 60, threshold: 3 })
@Controller('ordered')
class OrderedController {
  @Get()
  ordered() {
    return 'ordered';
  }
}

describe.each(HTTP_ADAPTERS)('the auth-order warning on %s', (adapter: HttpAdapterKind) => {
  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  async function boot(options: { getTracker?: () => string; globalGuard?: boolean } = {}) {
    const logs = new LogCapture();
    const app = await startHttpApp(
      {
        imports: [RateLimitModule.forRoot({ keyPrefix: uniquePrefix(), ...options })],
        controllers: [LateAuthController, OpenController, OrderedController],
      },
      { adapter, logger: logs },
    );
    apps.push(app);
    const warnings = () =>
      logs.entries.filter((e) => e.level === 'warn' && e.context === 'RateLimit');
    return { http: app.getHttpServer(), warnings };
  }

  it('warns once per route when requests with credentials reach the default tracker without a user', async () => {
    const { http, warnings } = await boot();
    const codes: number[] = [];
    // Two users, one IP: both count against it, which is what the warning is about.
    for (const token of ['alice', 'bob', 'alice', 'bob']) {
      codes.push((await request(http).get('/late/profile').auth(token, { type: 'bearer' })).status);
    }
    expect(codes).toEqual([200, 200, 200, 429]);
    expect(warnings()).toHaveLength(1);
    const [warning] = warnings();
    expect(warning.message).toContain('GET /late/profile (LateAuthController.profile)');
    expect(warning.message).toContain(`nest-rate-limit/${DOCS}`);

    // Another route of the controller is warned about once too.
    for (let i = 0; i < 3; i++) {
      await request(http).get('/late/orders').auth('carol', { type: 'bearer' });
    }
    expect(warnings().map((w) => w.message.split(' (')[0])).toEqual([
      'GET /late/profile',
      'GET /late/orders',
    ]);
  });

  it('does not warn about requests without an Authorization header', async () => {
    const { http, warnings } = await boot();
    for (let i = 0; i < 3; i++) expect((await request(http).get('/open')).status).toBe(200);
    // Turned away by the auth guard, after the rate-limit guard counted them by IP.
    expect((await request(http).get('/late/profile')).status).toBe(403);
    expect(warnings()).toEqual([]);
  });

  it('does not warn when getTracker decides who is counted', async () => {
    const { http, warnings } = await boot({ getTracker: () => 'everyone' });
    for (let i = 0; i < 3; i++) {
      await request(http).get('/late/profile').auth('alice', { type: 'bearer' });
    }
    expect(warnings()).toEqual([]);
  });

  it('does not warn when the rate-limit guard runs after authentication', async () => {
    const { http, warnings } = await boot({ globalGuard: false });
    const codes: number[] = [];
    for (const token of ['alice', 'bob', 'alice', 'bob', 'alice', 'alice']) {
      codes.push((await request(http).get('/ordered').auth(token, { type: 'bearer' })).status);
    }
    // Each user has a quota of their own.
    expect(codes).toEqual([200, 200, 200, 200, 200, 429]);
    expect(warnings()).toEqual([]);
  });
});

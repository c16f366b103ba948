import { afterEach, describe, expect, it } from '@jest/globals';
import { Controller, Get, type INestApplication, UseGuards } from '@nestjs/common';
import request from 'supertest';
import { RateLimit, RateLimitGuard, RateLimitModule } from '../../../lib/index.js';
import { LogCapture } from '../../transports/fixtures/log-capture.js';
import {
  HTTP_ADAPTERS,
  type HttpAdapterKind,
  startHttpApp,
  USER_HEADER,
} from './fixtures/http-app.js';
import { uniquePrefix } from './fixtures/app.js';

const DOCS = 'nest-rate-limit/docs/troubleshooting.md#behind-a-proxy';
const FIX: Record<HttpAdapterKind, string> = {
  express: "app.set('trust proxy', 1)",
  fastify: 'new FastifyAdapter({ trustProxy: 1 })',
};

@RateLimit({ period: 60, threshold: 3 })
@Controller('search')
class SearchController {
  @Get()
  search() {
    return 'results';
  }

  @Get('suggest')
  suggest() {
    return 'suggestions';
  }
}

/** Counts whatever the route says, never the address. */
@RateLimit({ period: 60, threshold: 3, tracker: () => 'everyone' })
@Controller('shared')
class SharedController {
  @Get()
  shared() {
    return 'shared';
  }
}

/** A guard of its own as well, built in this module: the app is still warned about once. */
@UseGuards(RateLimitGuard)
@RateLimit({ period: 60, threshold: 10 })
@Controller('guarded')
class GuardedController {
  @Get()
  guarded() {
    return 'guarded';
  }
}

describe.each(HTTP_ADAPTERS)('the proxy-trust warning on %s', (adapter: HttpAdapterKind) => {
  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  async function boot(trustProxy: boolean, options: { getTracker?: () => string } = {}) {
    const logs = new LogCapture();
    const app = await startHttpApp(
      {
        imports: [RateLimitModule.forRoot({ keyPrefix: uniquePrefix(), ...options })],
        controllers: [SearchController, SharedController, GuardedController],
      },
      { adapter, trustProxy, logger: logs },
    );
    apps.push(app);
    const warnings = () =>
      logs.entries.filter((e) => e.level === 'warn' && e.context === 'RateLimit');
    return { http: app.getHttpServer(), warnings };
  }

  it('warns once per app, naming the fix, when forwarded requests reach an app that does not trust proxies', async () => {
    const { http, warnings } = await boot(false);
    const codes: number[] = [];
    // Three clients behind one proxy: all count against the proxy's address.
    for (const client of ['203.0.113.1', '203.0.113.2', '203.0.113.3', '203.0.113.4']) {
      codes.push((await request(http).get('/search').set('X-Forwarded-For', client)).status);
    }
    expect(codes).toEqual([200, 200, 200, 429]);
    for (let i = 0; i < 5; i++) {
      await request(http).get('/search/suggest').set('X-Forwarded-For', `198.51.100.${i}`);
      await request(http).get('/search/suggest').set('Forwarded', `for=198.51.100.${i}`);
      await request(http).get('/guarded').set('X-Forwarded-For', `198.51.100.${i}`);
    }
    expect(warnings()).toHaveLength(1);
    const [warning] = warnings();
    expect(warning.message).toContain('X-Forwarded-For');
    expect(warning.message).toContain(FIX[adapter]);
    expect(warning.message).toContain(DOCS);
  });

  it('warns of a Forwarded header too', async () => {
    const { http, warnings } = await boot(false);
    await request(http).get('/search').set('Forwarded', 'for=203.0.113.1');
    expect(warnings().map((w) => w.message)).toEqual([expect.stringContaining('with Forwarded')]);
  });

  it('does not warn when the app trusts proxies', async () => {
    const { http, warnings } = await boot(true);
    for (const client of ['203.0.113.1', '203.0.113.2', '203.0.113.3', '203.0.113.4']) {
      expect((await request(http).get('/search').set('X-Forwarded-For', client)).status).toBe(200);
    }
    expect(warnings()).toEqual([]);
  });

  it('does not warn about requests without a forwarding header', async () => {
    const { http, warnings } = await boot(false);
    for (let i = 0; i < 4; i++) await request(http).get('/search');
    expect(warnings()).toEqual([]);
  });

  it('does not warn about a user, or a route tracker of its own', async () => {
    const { http, warnings } = await boot(false);
    // Neither counts against the proxy's address.
    await request(http)
      .get('/search')
      .set(USER_HEADER, 'alice')
      .set('X-Forwarded-For', '203.0.113.1');
    await request(http).get('/shared').set('X-Forwarded-For', '203.0.113.1');
    expect(warnings()).toEqual([]);
    // The first request that does is warned about.
    await request(http).get('/search').set('X-Forwarded-For', '203.0.113.1');
    expect(warnings()).toHaveLength(1);
  });

  it('does not warn when getTracker decides who is counted', async () => {
    const { http, warnings } = await boot(false, { getTracker: () => 'everyone' });
    await request(http).get('/search').set('X-Forwarded-For', '203.0.113.1');
    expect(warnings()).toEqual([]);
  });
});

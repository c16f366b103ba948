import { afterEach, describe, expect, it } from '@jest/globals';
import { Controller, Get, type INestApplication, UseGuards } from '@nestjs/common';
import request from 'supertest';
import { RateLimit, RateLimitGuard } from '../../../lib/index.js';
import { LogCapture } from '../../transports/fixtures/log-capture.js';
import { HTTP_ADAPTERS, type HttpAdapterKind, startHttpApp } from './fixtures/http-app.js';

@RateLimit({ period: 60, threshold: 1 })
@Controller('decorated')
class DecoratedController {
  @Get()
  decorated() {
    return 'decorated';
  }
}

@UseGuards(RateLimitGuard)
@RateLimit({ period: 60, threshold: 1 })
@Controller('guarded')
class GuardedController {
  @Get()
  guarded() {
    return 'guarded';
  }
}

describe.each(HTTP_ADAPTERS)('an app without RateLimitModule on %s', (adapter: HttpAdapterKind) => {
  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  it('does not start with @UseGuards(RateLimitGuard), and the error names the module', async () => {
    await expect(startHttpApp({ controllers: [GuardedController] }, { adapter })).rejects.toThrow(
      /RateLimitGuard.*RateLimitModule\.forRoot\(\) or forRootAsync\(\)/s,
    );
  });

  // Nothing of the library runs, so nothing can say so: what the troubleshooting page describes.
  it('leaves @RateLimit routes unlimited, without headers, and logs nothing about it', async () => {
    const logs = new LogCapture();
    const app = await startHttpApp(
      { controllers: [DecoratedController] },
      { adapter, logger: logs },
    );
    apps.push(app);
    for (let i = 0; i < 3; i++) {
      const res = await request(app.getHttpServer()).get('/decorated');
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-policy']).toBeUndefined();
    }
    expect(logs.entries.filter((e) => e.context === 'RateLimit')).toEqual([]);
  });
});

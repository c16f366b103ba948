import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { Controller, Get, type INestApplication, Module } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test, type TestingModuleBuilder } from '@nestjs/testing';
import request from 'supertest';
import { RateLimit, RateLimitModule, RateLimitStore } from 'nest-rate-limit';
import { RATE_LIMIT_CLOCK, RateLimitTesting, TestClock } from 'nest-rate-limit/testing';

// The app as it ships; in your project, `import { AppModule } from '../src/app.module'`.
// Nothing in it knows about tests.
@Controller('hello')
class HelloController {
  @RateLimit({ period: 30, threshold: 2 }) // 2 calls per 30 s per client
  @Get('sayHi')
  sayHi() {
    return { message: 'Hi!' };
  }
}

@Module({ imports: [RateLimitModule.forRoot()], controllers: [HelloController] })
class AppModule {}

/** The app on Express or Fastify, with what the test replaces in it. */
async function start(
  platform: 'express' | 'fastify',
  replace: (builder: TestingModuleBuilder) => TestingModuleBuilder,
): Promise<INestApplication> {
  const moduleRef = await replace(Test.createTestingModule({ imports: [AppModule] })).compile();
  const app =
    platform === 'fastify'
      ? moduleRef.createNestApplication(new FastifyAdapter())
      : moduleRef.createNestApplication();
  await app.init();
  if (platform === 'fastify') await app.getHttpAdapter().getInstance().ready();
  return app;
}

describe.each(['express', 'fastify'] as const)('the app on %s', (platform) => {
  describe('on a test clock', () => {
    const clock = new TestClock();
    let app: INestApplication;
    const sayHi = () => request(app.getHttpServer()).get('/hello/sayHi');

    beforeAll(async () => {
      app = await start(platform, (builder) =>
        builder.overrideProvider(RATE_LIMIT_CLOCK).useValue(clock),
      );
    });
    // Each test starts with every quota whole, whatever the one before spent.
    beforeEach(() => RateLimitTesting.reset(app));
    afterAll(() => app.close());

    it('answers the third call with 429, and 200 again once the window has passed', async () => {
      const statuses = [(await sayHi()).status, (await sayHi()).status, (await sayHi()).status];
      expect(statuses).toEqual([200, 200, 429]);

      clock.advance('30s');
      expect((await sayHi()).status).toBe(200);
    });

    it('forgets every count on reset()', async () => {
      await sayHi();
      await sayHi();
      expect((await sayHi()).status).toBe(429);

      await RateLimitTesting.reset(app);
      expect((await sayHi()).status).toBe(200);
    });
  });

  describe('with limits switched off', () => {
    let app: INestApplication;

    beforeAll(async () => {
      app = await start(platform, (builder) =>
        builder.overrideProvider(RateLimitStore).useValue(RateLimitTesting.allowAll()),
      );
    });
    afterAll(() => app.close());

    it('lets every call through, with headers that show the whole quota left', async () => {
      for (let i = 0; i < 50; i++) {
        const response = await request(app.getHttpServer()).get('/hello/sayHi');
        expect(response.status).toBe(200);
        expect(response.headers['ratelimit']).toContain('r=2');
      }
    });
  });
});

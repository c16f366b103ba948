/** A Nest app whose forRootAsync factory returns a misspelled option does not start. */
import { describe, expect, it } from '@jest/globals';
import { Controller, Get, Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { RateLimit, RateLimitModule, type RateLimitModuleOptions } from '../../lib/index.js';

@Controller('login')
class LoginController {
  @RateLimit({ period: '15m', threshold: 2 })
  @Get()
  login() {
    return 'ok';
  }
}

/** Where the options come from, as a ConfigService would hand them over. */
@Injectable()
class Settings {
  options: Record<string, unknown> = {};
}

@Module({ providers: [Settings], exports: [Settings] })
class SettingsModule {}

async function start(options: Record<string, unknown>) {
  const ref = await Test.createTestingModule({
    imports: [
      RateLimitModule.forRootAsync({
        imports: [SettingsModule],
        inject: [Settings],
        useFactory: (settings: Settings) =>
          ({ ...settings.options, ...options }) as RateLimitModuleOptions,
      }),
    ],
    controllers: [LoginController],
  }).compile();
  const app = ref.createNestApplication({ logger: false });
  await app.init();
  return app;
}

describe('forRootAsync with a misspelled option', () => {
  it.each([
    // Would have given the memory store, and no sharing between instances.
    ['reddis', 'redis://127.0.0.1:6379', 'redis'],
    ['timout', 50, 'timeout'],
    ['onStoreErorr', 'deny', 'onStoreError'],
  ])('fails to boot on %s, naming the field it meant', async (field, value, meant) => {
    await expect(start({ [field]: value })).rejects.toThrow(
      `RateLimitModule options: unknown field "${field}" (did you mean "${meant}"?)`,
    );
  });

  it('boots and limits with the same options spelled right', async () => {
    const app = await start({ timeout: 50, onStoreError: 'deny' });
    const server = app.getHttpServer();
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push((await request(server).get('/login')).status);
    expect(codes).toEqual([200, 200, 429]);
    await app.close();
  });
});

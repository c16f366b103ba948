/**
 * Telemetry off, by the option or because `@opentelemetry/api` is missing: the module limits as
 * before and records nothing, even with an SDK registered; the library never imports the API
 * statically; bad `telemetry` options fail naming the field.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, type INestApplication, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { RateLimit, RateLimitModule, RateLimitService } from '../../lib/index.js';
import { RATE_LIMIT_TELEMETRY } from '../../lib/rate-limit.constants.js';
import { loadTelemetry } from '../../lib/telemetry/load-telemetry.js';
import { NO_TELEMETRY } from '../../lib/telemetry/rate-limit-telemetry.js';
import { startTelemetry, type TestTelemetry } from '../support/otel.js';

@Controller()
class HelloController {
  @RateLimit({ threshold: 2, period: '1m' })
  @Get('hello')
  hello() {
    return 'hi';
  }
}

describe('telemetry: false', () => {
  let telemetry: TestTelemetry;
  let app: INestApplication;

  beforeAll(async () => {
    telemetry = startTelemetry();
    @Module({
      imports: [RateLimitModule.forRoot({ telemetry: false })],
      controllers: [HelloController],
    })
    class AppModule {}
    const ref = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
  });
  afterAll(async () => {
    await app?.close();
    await telemetry.stop();
  });

  it('limits as before and records nothing, though an SDK is registered', async () => {
    const codes = [];
    for (let i = 0; i < 3; i++)
      codes.push((await request(app.getHttpServer()).get('/hello')).status);
    expect(codes).toEqual([200, 200, 429]);
    const decision = await app.get(RateLimitService).consume('k', { threshold: 1 });
    expect(decision.allowed).toBe(true);
    expect(app.get(RATE_LIMIT_TELEMETRY)).toBe(NO_TELEMETRY);
    expect([...(await telemetry.collect()).keys()]).toEqual([]);
    expect(telemetry.spans.getFinishedSpans()).toEqual([]);
  });
});

describe('without @opentelemetry/api', () => {
  it('is off when the package cannot be loaded, or when the option says so', async () => {
    const missing = () => Promise.resolve(undefined);
    expect(await loadTelemetry({ nearLimit: 0.1 }, 'memory', missing)).toBe(NO_TELEMETRY);
    expect(await loadTelemetry(false, 'memory')).toBe(NO_TELEMETRY);
    expect((await loadTelemetry({ nearLimit: 0.1 }, 'memory')).enabled).toBe(true);
  });

  it('is imported nowhere in lib/ but by the loader, dynamically', () => {
    const lib = fileURLToPath(new URL('../../lib', import.meta.url));
    const files = (dir: string): string[] =>
      readdirSync(dir).flatMap((name) => {
        const path = join(dir, name);
        return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
      });
    const valueImports = files(lib).filter((file) =>
      /^import (?!type )[^;]*from '@opentelemetry\//m.test(readFileSync(file, 'utf8')),
    );
    expect(valueImports).toEqual([]);
    const dynamic = files(lib).filter((file) =>
      readFileSync(file, 'utf8').includes("import('@opentelemetry/api')"),
    );
    expect(dynamic.map((f) => f.slice(lib.length))).toEqual(['/telemetry/load-telemetry.ts']);
  });
});

describe('the telemetry option', () => {
  const start = (telemetry: unknown) =>
    Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ telemetry } as never)],
    }).compile();

  it.each([
    ['yes', /telemetry must be true, false or \{ nearLimit \}, got "yes"/],
    [{ nearLimit: 2 }, /telemetry\.nearLimit must be a number from 0 to 1, got 2/],
    [{ nearLimit: Number.NaN }, /telemetry\.nearLimit must be a number from 0 to 1/],
    [{ nearlimit: 0.2 }, /unknown field "nearlimit" \(did you mean "nearLimit"\?\)/],
  ])('rejects %p naming the field', async (value, message) => {
    await expect(start(value)).rejects.toThrow(message);
  });
});

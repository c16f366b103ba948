/**
 * Telemetry of a calendar quota that names no algorithm, through a real OpenTelemetry SDK on a
 * real Nest app over HTTP: its decisions are recorded under `fixed-window`, the algorithm that
 * counted them, on a route and through RateLimitService.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, type INestApplication, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { RateLimit, RateLimitModule, RateLimitService } from '../../lib/index.js';
import { startTelemetry, type TestTelemetry } from '../support/otel.js';

@Controller()
class ReportsController {
  @RateLimit({ calendar: 'day', threshold: 1, name: 'daily' })
  @Get('reports')
  reports() {
    return 'report';
  }
}

describe('telemetry of a calendar quota that names no algorithm', () => {
  let telemetry: TestTelemetry;
  let app: INestApplication;

  beforeAll(async () => {
    telemetry = startTelemetry();
    @Module({
      imports: [RateLimitModule.forRoot({ getTracker: () => 'someone' })],
      controllers: [ReportsController],
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

  it('records its decisions under fixed-window', async () => {
    const codes = [];
    for (let i = 0; i < 2; i++)
      codes.push((await request(app.getHttpServer()).get('/reports')).status);
    expect(codes).toEqual([200, 429]);
    const limiter = app.get(RateLimitService);
    await limiter.consume('exports', { calendar: 'month', threshold: 5, name: 'monthly' });

    const decisions = (await telemetry.collect()).get('rate_limit.decisions') ?? [];
    const seen = decisions.map(({ attributes }) => [
      attributes['rate_limit.policy'],
      attributes['rate_limit.algorithm'],
      attributes['rate_limit.outcome'],
    ]);
    expect(seen.sort()).toEqual([
      ['daily', 'fixed-window', 'allowed'],
      ['daily', 'fixed-window', 'limited'],
      ['monthly', 'fixed-window', 'allowed'],
    ]);
  });
});

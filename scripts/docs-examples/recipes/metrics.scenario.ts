// Metrics: with a MeterProvider registered before the app starts, GET /metrics serves the
// decisions in the Prometheus text format, on Express and Fastify alike, and is never limited.
import { Controller, Get, Module } from '@nestjs/common';
import { metrics } from '@opentelemetry/api';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { RateLimit } from 'nest-rate-limit';
import { AppModule, prometheus } from './metrics.js';
import { assert, type HttpScenario } from './support.js';

// As the page's main.ts does, before any app of this run starts (the runner imports every
// scenario first): the other recipes then run with telemetry on, as an app with it would.
metrics.setGlobalMeterProvider(new MeterProvider({ readers: [prometheus] }));

@Controller('limited')
class LimitedController {
  @RateLimit({ period: 30, threshold: 1 })
  @Get()
  get() {
    return {};
  }
}

@Module({ imports: [AppModule], controllers: [LimitedController] })
class MetricsApp {}

export const scenario: HttpScenario = {
  kind: 'http',
  module: MetricsApp,
  async run(http) {
    assert.equal((await http.get('/limited')).status, 200);
    assert.equal((await http.get('/limited')).status, 429);
    for (let i = 0; i < 3; i++) {
      const scrape = await http.get('/metrics');
      assert.equal(scrape.status, 200, 'never limited');
      assert.match(scrape.headers.get('content-type') ?? '', /^text\/plain/);
      const limited = String(scrape.body)
        .split('\n')
        .filter((line) => line.startsWith('rate_limit_decisions_total{'))
        .filter((line) => line.includes('rate_limit_route="GET /limited"'))
        .filter((line) => line.includes('rate_limit_outcome="limited"'));
      assert.equal(limited.length, 1, 'the rejection, counted');
    }
  },
};

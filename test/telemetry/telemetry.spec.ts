/**
 * Metrics and traces through a real OpenTelemetry SDK, on a real Nest app over HTTP: a scripted
 * sequence of requests and service calls gives exact counts per outcome, on the memory store and
 * on a real redis-server through ioredis and node-redis, Redis killed at the end (degraded
 * answers and the breaker's state changes), with a shadow policy, a wait for a slot and a lease.
 * No attribute, of a metric or of a span, ever holds the tracker or the key.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, type INestApplication, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { trace } from '@opentelemetry/api';
import { type Histogram } from '@opentelemetry/sdk-metrics';
import { type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { type IncomingMessage, type ServerResponse } from 'node:http';
import request from 'supertest';
import {
  RateLimit,
  type RateLimitModuleOptions,
  RateLimitModule,
  RateLimitService,
} from '../../lib/index.js';
import { type ClientKind } from '../support/clients.js';
import { type Point, spanAttributes, startTelemetry, type TestTelemetry } from '../support/otel.js';
import { useRedis } from '../support/stores.js';
import { inTier } from '../support/matrix.js';

const TRACKER = 'tracker-secret-7';
const SECRET = /secret/;

@Controller()
class ShopController {
  @RateLimit({ name: 'items', threshold: 3, period: '1m' })
  @Get('items/:id')
  item() {
    return 'item';
  }

  @RateLimit({ name: 'watched', threshold: 1, period: '1m', shadow: true })
  @Get('watched')
  watched() {
    return 'watched';
  }

  @RateLimit({
    name: 'queued',
    algorithm: 'token-bucket',
    threshold: 1,
    period: '2s',
    burst: 1,
    maxWait: '5s',
  })
  @Get('queued')
  queued() {
    return 'queued';
  }

  @RateLimit({ name: 'ping', threshold: 100, period: '1m' })
  @Get('ping')
  ping() {
    return 'pong';
  }
}

/** The application with the module's options, each request under a span of its own. */
async function startApp(options: RateLimitModuleOptions): Promise<INestApplication> {
  @Module({
    imports: [RateLimitModule.forRoot({ getTracker: () => TRACKER, ...options })],
    controllers: [ShopController],
  })
  class AppModule {}
  const ref = await Test.createTestingModule({ imports: [AppModule] }).compile();
  const app = ref.createNestApplication({ logger: false });
  // What an HTTP instrumentation does: the request runs under its own active span.
  const tracer = trace.getTracer('test-http');
  app.use((req: IncomingMessage, res: ServerResponse, next: () => void) =>
    tracer.startActiveSpan(`${req.method} ${req.url}`, (span) => {
      res.on('finish', () => span.end());
      next();
    }),
  );
  await app.listen(0, '127.0.0.1');
  return app;
}

/** `route|policy|outcome` (or the keys asked for) → value, sorted, for exact comparisons. */
function tally(points: Point[] | undefined, keys: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const { attributes, value } of points ?? []) {
    const name = keys.map((k) => String(attributes[`rate_limit.${k}`])).join('|');
    out[name] = (out[name] ?? 0) + (typeof value === 'number' ? value : value.count);
  }
  return out;
}

const DECISION_KEYS = ['route', 'policy', 'algorithm', 'store', 'outcome'].map(
  (k) => `rate_limit.${k}`,
);

async function statuses(app: INestApplication, path: string, times: number) {
  const codes: number[] = [];
  for (let i = 0; i < times; i++) codes.push((await request(app.getHttpServer()).get(path)).status);
  return codes;
}

/**
 * The scripted sequence every store runs; its statuses are checked on the way. Resolves with how
 * long the two requests to /queued took, in seconds.
 */
async function script(app: INestApplication): Promise<number> {
  expect(await statuses(app, '/items/1', 5)).toEqual([200, 200, 200, 429, 429]);
  // Shadow mode: the second and third would have been turned away.
  expect(await statuses(app, '/watched', 3)).toEqual([200, 200, 200]);
  // One token every 2 s, no burst: the second waits for its slot, however slow the machine is
  // between the two requests (a token every 100 ms let a busy machine's second request through).
  const queuedAt = performance.now();
  expect(await statuses(app, '/queued', 2)).toEqual([200, 200]);
  const queuedS = (performance.now() - queuedAt) / 1000;
  const service = app.get(RateLimitService);
  const jobs = { name: 'jobs', threshold: 1, period: 60 };
  expect((await service.consume('job-key-secret', jobs)).allowed).toBe(true);
  expect((await service.consume('job-key-secret', jobs)).allowed).toBe(false);
  return queuedS;
}

const EXPORTS = { name: 'exports', algorithm: 'concurrency', threshold: 2, period: '30s' } as const;

describe.each<[string, ClientKind | undefined]>([
  ['memory', undefined],
  ...inTier<[string, ClientKind]>([
    ['redis through ioredis', 'ioredis'],
    ['redis through node-redis', 'node-redis'],
  ]),
])('telemetry on %s', (_name, client) => {
  const redis = useRedis(client === undefined ? 'memory' : 'redis');
  const store = client === undefined ? 'memory' : 'redis';
  let telemetry: TestTelemetry;
  let app: INestApplication;

  beforeAll(async () => {
    telemetry = startTelemetry();
    const redisOption = client === undefined ? {} : { redis: await redis().connect(client) };
    app = await startApp({ ...redisOption, telemetry: { nearLimit: 0.5 } });
  });
  afterAll(async () => {
    await app?.close();
    await telemetry.stop();
  });

  it('counts every decision by route, policy and outcome, exactly', async () => {
    const queuedS = await script(app);
    const metrics = await telemetry.collect();
    const decisions = metrics.get('rate_limit.decisions');
    expect(tally(decisions, ['route', 'policy', 'outcome'])).toEqual({
      'GET /items/:id|items|allowed': 3,
      'GET /items/:id|items|limited': 2,
      'GET /watched|watched|allowed': 1,
      'GET /watched|watched|shadow_limited': 2,
      'GET /queued|queued|allowed': 1,
      'GET /queued|queued|waited': 1,
      'RateLimitService.consume|jobs|allowed': 1,
      'RateLimitService.consume|jobs|limited': 1,
    });
    for (const { attributes } of decisions!) {
      expect(Object.keys(attributes).sort()).toEqual([...DECISION_KEYS].sort());
      expect(attributes['rate_limit.store']).toBe(store);
    }
    expect(Object.keys(tally(decisions, ['algorithm'])).sort()).toEqual([
      'sliding-window',
      'token-bucket',
    ]);
    // Under half the threshold left: items 2 and 3, watched 1, queued 1 and 2 (no burst), jobs 1.
    expect(tally(metrics.get('rate_limit.near_limit'), ['route', 'outcome'])).toEqual({
      'GET /items/:id|allowed': 2,
      'GET /watched|allowed': 1,
      'GET /queued|allowed': 1,
      'GET /queued|waited': 1,
      'RateLimitService.consume|allowed': 1,
    });
    const waits = metrics.get('rate_limit.wait.duration')!;
    expect(tally(waits, ['route', 'policy', 'outcome'])).toEqual({
      'GET /queued|queued|waited': 1,
    });
    // The second waited for its slot, 2 s after the first came: the pair took at least that,
    // and the wait, however much of it the time between the two requests used up, is part of it.
    const wait = waits[0].value as Histogram;
    expect(queuedS).toBeGreaterThanOrEqual(1.999);
    expect(wait.sum).toBeGreaterThan(0);
    expect(wait.sum).toBeLessThanOrEqual(queuedS);
  });

  it('times each call to Redis, and answers from the block cache there', async () => {
    const metrics = await telemetry.collect();
    // The memory store works in-process: its calls are not timed. On Redis the block cache
    // answered the fifth /items/1 and the third /watched.
    expect(
      tally(metrics.get('rate_limit.store.duration'), ['store', 'operation', 'outcome']),
    ).toEqual(client === undefined ? {} : { 'redis|consume|ok': 4 + 2 + 2, 'redis|reserve|ok': 2 });
    expect(tally(metrics.get('rate_limit.block_cache.answers'), ['policy'])).toEqual(
      client === undefined ? {} : { items: 1, watched: 1 },
    );
  });

  it('counts the leases held', async () => {
    const service = app.get(RateLimitService);
    const permit = await service.acquire('export-key-secret', EXPORTS);
    let metrics = await telemetry.collect();
    expect(tally(metrics.get('rate_limit.leases'), ['policy', 'algorithm'])).toEqual({
      'exports|concurrency': 1,
    });
    await permit.release();
    metrics = await telemetry.collect();
    expect(tally(metrics.get('rate_limit.leases'), ['policy', 'algorithm'])).toEqual({
      'exports|concurrency': 0,
    });
    expect(tally(metrics.get('rate_limit.decisions'), ['route', 'outcome'])).toMatchObject({
      'RateLimitService.acquire|allowed': 1,
    });
    expect(tally(metrics.get('rate_limit.store.duration'), ['operation'])).toEqual(
      client === undefined ? {} : { consume: 9, reserve: 2, release: 1 },
    );
  });

  it('puts the decision on the request span, and the wait and each Redis call under it', () => {
    const spans = telemetry.spans.getFinishedSpans();
    const requests = spans.filter((s) => s.name.startsWith('GET /items/1'));
    expect(requests).toHaveLength(5);
    expect(requests.map((s) => s.attributes['rate_limit.outcome'])).toEqual([
      'allowed',
      'allowed',
      'allowed',
      'limited',
      'limited',
    ]);
    expect(requests[0].attributes).toMatchObject({
      'rate_limit.route': 'GET /items/:id',
      'rate_limit.policy': 'items',
    });
    const children = (parent: ReadableSpan) =>
      spans.filter((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId);
    const queued = spans.filter((s) => s.name === 'GET /queued');
    expect(queued.map((s) => s.attributes['rate_limit.outcome'])).toEqual(['allowed', 'waited']);
    const waitSpans = children(queued[1]).filter((s) => s.name === 'rate_limit.wait');
    expect(waitSpans).toHaveLength(1);
    expect(waitSpans[0].attributes['rate_limit.outcome']).toBe('waited');
    // A span per call to Redis, none for the in-process memory store.
    expect(children(requests[0]).filter((s) => s.name === 'rate_limit.store')).toHaveLength(
      client === undefined ? 0 : 1,
    );
    expect(children(requests[4]).filter((s) => s.name === 'rate_limit.store')).toHaveLength(0);
  });

  it('never puts the tracker or the key in an attribute', async () => {
    const metrics = await telemetry.collect();
    const all = [
      ...[...metrics.values()].flat().map((p) => p.attributes),
      ...spanAttributes(telemetry.spans.getFinishedSpans()),
    ];
    expect(all.length).toBeGreaterThan(20);
    for (const attributes of all) {
      for (const value of Object.values(attributes)) expect(String(value)).not.toMatch(SECRET);
    }
  });

  if (client === undefined) return;

  it('counts degraded answers and the store state while Redis is down', async () => {
    await redis().kill();
    expect(await statuses(app, '/ping', 3)).toEqual([200, 200, 200]);
    const metrics = await telemetry.collect();
    expect(tally(metrics.get('rate_limit.decisions'), ['route', 'outcome'])).toMatchObject({
      'GET /ping|degraded': 3,
    });
    expect(tally(metrics.get('rate_limit.store.duration'), ['operation', 'outcome'])).toMatchObject(
      { 'consume|error': 3 },
    );
    // The outage began with the first failure; the third opened the breaker.
    expect(tally(metrics.get('rate_limit.store.state_changes'), ['store', 'state'])).toEqual({
      'redis|degraded': 1,
      'redis|open': 1,
    });
    const failed = telemetry.spans
      .getFinishedSpans()
      .filter((s) => s.name === 'rate_limit.store' && s.status.code === 2);
    expect(failed).toHaveLength(3);
  });
});

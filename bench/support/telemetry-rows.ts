/**
 * What telemetry costs a decision: `RateLimitService.consume` on the memory store, where nothing
 * hides the cost, with telemetry off, with `@opentelemetry/api` but no SDK, with the metrics SDK
 * and a reader, and with that SDK inside a sampled span (the decision becomes a span event).
 */
import 'reflect-metadata';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { context, metrics, trace } from '@opentelemetry/api';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { CollectingReader } from '../../test/support/otel.js';
import { RATE_LIMIT_TELEMETRY } from '../../lib/rate-limit.constants.js';
import { type RateLimitTelemetry } from '../../lib/telemetry/rate-limit-telemetry.js';
import {
  type RateLimitDecision,
  type RateLimitModuleOptions,
  type RateLimitPolicy,
  type RateLimitService,
} from '../../lib/index.js';
import { median } from './closed-loop.js';
import { integer, table } from './markdown.js';
import {
  consumeRate,
  SIDE_BY_SIDE_KEYS as KEYS,
  SIDE_BY_SIDE_ROUNDS as ROUNDS,
  SIDE_BY_SIDE_WARMUP as WARMUP,
  sideBySide,
  sideBySideCells,
  startMemoryService,
} from './side-by-side.js';

const POLICY: RateLimitPolicy = { algorithm: 'fixed-window', period: 60, threshold: 1_000_000 };

export type TelemetryRowId = 'off' | 'api' | 'sdk' | 'traced-off' | 'traced';

const LABELS: Record<TelemetryRowId, string> = {
  off: 'telemetry: false',
  api: '@opentelemetry/api, no SDK registered',
  sdk: 'metrics SDK with a reader',
  'traced-off': 'telemetry: false, inside a sampled span',
  traced: 'metrics SDK, inside a sampled span',
};

/** Median ops/s per row and, per row, the median of its ratio to `off` within each round. */
export interface TelemetryComparison {
  readonly perSecond: ReadonlyMap<TelemetryRowId, number>;
  readonly vsOff: ReadonlyMap<TelemetryRowId, number>;
  readonly calls: number;
  /** Per row, the median ns a route's `decided()` call takes, the store left out. */
  readonly recordNs: ReadonlyMap<TelemetryRowId, number>;
  /** Per row, the median ns a `storeCall()` (a Redis call timed) takes. */
  readonly storeCallNs: ReadonlyMap<TelemetryRowId, number>;
}

async function startService(options: RateLimitModuleOptions) {
  const { app, service } = await startMemoryService(options);
  return { app, service, telemetry: app.get<RateLimitTelemetry>(RATE_LIMIT_TELEMETRY) };
}

const RECORDS = 1_000_000;

/**
 * The telemetry's own part of a route's decision, alone: `decided()` as the guard calls it,
 * a tight loop of RECORDS calls on one decision, in ns per call.
 */
async function recordCost(
  telemetry: RateLimitTelemetry,
  decision: RateLimitDecision,
  spans: InMemorySpanExporter,
) {
  let started = performance.now();
  for (let i = 0; i < RECORDS; i++) {
    telemetry.decided('GET /items/:id', decision, false, 'attributes');
  }
  const decided = ((performance.now() - started) * 1e6) / RECORDS;
  // In chunks, between which the exporter takes the child spans made under a span and lets go
  // of them; only the chunks are timed.
  let elapsed = 0;
  for (let chunk = 0; chunk < RECORDS; chunk += 10_000) {
    started = performance.now();
    for (let i = 0; i < 10_000; i++) telemetry.storeCall('consume', true, started, started + 0.2);
    elapsed += performance.now() - started;
    await new Promise((resolve) => setImmediate(resolve));
    spans.reset();
  }
  const storeCall = (elapsed * 1e6) / RECORDS;
  return { decided, storeCall };
}

export async function telemetryOnMemory(quick: boolean): Promise<TelemetryComparison> {
  metrics.disable();
  const off = await startService({ telemetry: false });
  const api = await startService({});
  // Registered only now: the rows above took their meter while none was.
  const reader = new CollectingReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  metrics.setGlobalMeterProvider(meterProvider);
  const sdk = await startService({});
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(spans)],
  });
  const contextManager = new AsyncLocalStorageContextManager();
  const services: Record<TelemetryRowId, RateLimitService> = {
    off: off.service,
    api: api.service,
    sdk: sdk.service,
    'traced-off': off.service,
    traced: sdk.service,
  };
  // Tracing is registered for the traced rows alone: the others run as an app without it does.
  // One span around the run: every decision in it is recorded on that span.
  const traced = async <T>(id: TelemetryRowId, run: () => Promise<T>): Promise<T> => {
    if (id !== 'traced' && id !== 'traced-off') return run();
    trace.setGlobalTracerProvider(tracerProvider);
    context.setGlobalContextManager(contextManager.enable());
    try {
      return await trace.getTracer('bench').startActiveSpan('bench', async (span) => {
        try {
          return await run();
        } finally {
          span.end();
          spans.reset();
        }
      });
    } finally {
      trace.disable();
      context.disable();
    }
  };
  const loop = (id: TelemetryRowId, n: number) =>
    traced(id, () => consumeRate(services[id], POLICY, n));
  const ids: TelemetryRowId[] = ['off', 'api', 'sdk', 'traced-off', 'traced'];
  const records = new Map<TelemetryRowId, number[]>(ids.map((id) => [id, []]));
  const storeCalls = new Map<TelemetryRowId, number[]>(ids.map((id) => [id, []]));
  const telemetries: Record<TelemetryRowId, RateLimitTelemetry> = {
    off: off.telemetry,
    api: api.telemetry,
    sdk: sdk.telemetry,
    'traced-off': off.telemetry,
    traced: sdk.telemetry,
  };
  const decision = await off.service.consume('record', POLICY);
  const record = (id: TelemetryRowId) =>
    traced(id, () => recordCost(telemetries[id], decision, spans));
  try {
    const rows = await sideBySide('telemetry', ids, quick, loop, async (id) => {
      const cost = await record(id);
      records.get(id)!.push(cost.decided);
      storeCalls.get(id)!.push(cost.storeCall);
    });
    return {
      calls: rows.calls,
      perSecond: rows.perSecond,
      vsOff: rows.vsBaseline,
      recordNs: new Map(ids.map((id) => [id, median(records.get(id)!)])),
      storeCallNs: new Map(ids.map((id) => [id, median(storeCalls.get(id)!)])),
    };
  } finally {
    for (const { app } of [off, api, sdk]) await app.close();
    metrics.disable();
    await meterProvider.shutdown();
    await tracerProvider.shutdown();
  }
}

/** The table of the decisions section that shows what telemetry costs. */
export function renderTelemetry(c: TelemetryComparison): string {
  const ids: TelemetryRowId[] = ['off', 'api', 'sdk', 'traced-off', 'traced'];
  return [
    '### Telemetry',
    '',
    table(
      [
        'telemetry',
        'ops/s',
        'vs off',
        'µs per decision',
        'added µs',
        'decided() ns',
        'storeCall() ns',
      ],
      ids.map((id) => [
        LABELS[id],
        ...sideBySideCells(c.perSecond, c.vsOff, id, 'off'),
        c.recordNs.get(id)!.toFixed(0),
        c.storeCallNs.get(id)!.toFixed(0),
      ]),
    ),
    '',
    `\`RateLimitService.consume\` on the memory store (\`RateLimitModule.forRoot({})\`, no Redis), ` +
      `one call at a time, ${integer(c.calls)} calls over ${integer(KEYS)} keys per run, ` +
      `${ROUNDS} rounds in rotated order after ${integer(WARMUP)} warm-up calls each, a garbage ` +
      'collection before each run. Three apps in one process: `telemetry: false`; the default ' +
      'with no MeterProvider registered; the default with the metrics SDK (`MeterProvider` and a ' +
      'reader, never collected). "inside a sampled ' +
      'span" runs the SDK app under an active recording span, a tracer provider and an ' +
      'AsyncLocalStorage context manager registered for that row only (in-memory exporter), so ' +
      'each decision is also an event on the span; "telemetry: false, inside a sampled span" is ' +
      'the same without telemetry, what the context manager costs by itself. "decided() ns" ' +
      `is the telemetry's own part alone, without the store: ${integer(RECORDS)} calls of the ` +
      "guard's `decided()` on one decision after each run, the median of the rounds (under a " +
      'span, the decision is set as its attributes each time); "storeCall() ns" likewise for ' +
      'timing one call to Redis (a histogram record, and under a span a child span). "vs off" is the median of ' +
      'the ratios within each round.',
  ].join('\n');
}

/**
 * A real OpenTelemetry SDK for a spec: a MeterProvider with a reader the spec collects from, a
 * tracer provider exporting to memory, and a context manager on AsyncLocalStorage (the one Node's
 * SDK registers), installed as the API's globals before the application under test is created.
 */
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { type Attributes, context, metrics, trace } from '@opentelemetry/api';
import {
  type DataPoint,
  type Histogram,
  MeterProvider,
  MetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';

/** A reader collected on demand, as a Prometheus scrape would. */
export class CollectingReader extends MetricReader {
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
}

/** One data point of a metric: its attributes and value (a number, or a histogram). */
export interface Point {
  readonly attributes: Attributes;
  readonly value: number | Histogram;
}

export interface TestTelemetry {
  /** Collects now; the points of each metric by name, for the module's meter only. */
  collect(): Promise<Map<string, Point[]>>;
  readonly spans: InMemorySpanExporter;
  /** Unregisters the globals and shuts the providers down. */
  stop(): Promise<void>;
}

/** Registers a fresh SDK as the API's globals; call before the application is created. */
export function startTelemetry(): TestTelemetry {
  const reader = new CollectingReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(spans)],
  });
  metrics.disable();
  trace.disable();
  context.disable();
  metrics.setGlobalMeterProvider(meterProvider);
  trace.setGlobalTracerProvider(tracerProvider);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  return {
    spans,
    collect: async () => {
      const { resourceMetrics } = await reader.collect();
      const byName = new Map<string, Point[]>();
      for (const scope of resourceMetrics.scopeMetrics) {
        if (scope.scope.name !== 'nest-rate-limit') continue;
        for (const metric of scope.metrics) {
          const points = (metric.dataPoints as DataPoint<number | Histogram>[]).map((p) => ({
            attributes: p.attributes,
            value: p.value,
          }));
          byName.set(metric.descriptor.name, points);
        }
      }
      return byName;
    },
    stop: async () => {
      metrics.disable();
      trace.disable();
      context.disable();
      await meterProvider.shutdown();
      await tracerProvider.shutdown();
    },
  };
}

/** Every span's attributes and its events' attributes, for checks that span every one. */
export function spanAttributes(spans: readonly ReadableSpan[]): Attributes[] {
  return spans.flatMap((s) => [s.attributes, ...s.events.map((e) => e.attributes ?? {})]);
}

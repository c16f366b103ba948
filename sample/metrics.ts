import { Controller, Get, Header } from '@nestjs/common';
import { diag, metrics } from '@opentelemetry/api';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { SkipRateLimit } from 'nest-rate-limit';

/** The OpenTelemetry SDK's Prometheus reader, served by the app itself rather than its own port. */
const prometheus = new PrometheusExporter({ preventServerStart: true });
const serializer = new PrometheusSerializer();
let started = false;

/**
 * Registers the SDK's `MeterProvider` as the global one, once. Call it before the Nest app is
 * created: the module takes its meter from the global provider as it starts.
 */
export function startMetrics(): void {
  if (started) return;
  started = true;
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [prometheus] }));
}

/**
 * `GET /metrics`: every `rate_limit.*` instrument, in the Prometheus text format. The body is
 * returned rather than written to the response, so it works on Express and Fastify alike.
 */
@SkipRateLimit()
@Controller('metrics')
export class MetricsController {
  @Get()
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  async metrics(): Promise<string> {
    const { resourceMetrics, errors } = await prometheus.collect();
    if (errors.length > 0) diag.error('Prometheus: metrics collection errors', ...errors);
    return serializer.serialize(resourceMetrics);
  }
}

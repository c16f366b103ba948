import { type IncomingMessage, type ServerResponse } from 'node:http';
import { Controller, Get, Req, Res } from '@nestjs/common';
import { metrics } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { SkipRateLimit } from 'nest-rate-limit';

/** The OpenTelemetry SDK's Prometheus reader, served by the app itself rather than its own port. */
const prometheus = new PrometheusExporter({ preventServerStart: true });
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

/** `GET /metrics`: every `rate_limit.*` instrument, in the Prometheus text format. */
@SkipRateLimit()
@Controller('metrics')
export class MetricsController {
  @Get()
  metrics(@Req() request: IncomingMessage, @Res() response: ServerResponse): void {
    prometheus.getMetricsRequestHandler(request, response);
  }
}

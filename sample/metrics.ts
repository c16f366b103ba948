import { Controller, Get, Header } from '@nestjs/common';
import { type ExecutionContext } from '@nestjs/common';
import { type RateLimitDecision, SkipRateLimit } from 'nest-rate-limit';
import { Counter, Registry } from 'prom-client';

/** The sample's own registry, so the counter below is all `/metrics` shows. */
export const registry = new Registry();

const decisions = new Counter({
  name: 'rate_limit_decisions_total',
  help: 'Rate-limit decisions by handler and outcome',
  labelNames: ['handler', 'outcome'] as const,
  registers: [registry],
});

/** Wired as `onDecision`: one increment per decision, labelled `allowed`, `limited` or `fallback`. */
export function countDecision(context: ExecutionContext, decision: RateLimitDecision): void {
  const handler = `${context.getClass().name}.${context.getHandler().name}`;
  const outcome = decision.degraded ? 'fallback' : decision.allowed ? 'allowed' : 'limited';
  decisions.inc({ handler, outcome });
}

@SkipRateLimit()
@Controller('metrics')
export class MetricsController {
  @Get()
  @Header('Content-Type', registry.contentType)
  metrics(): Promise<string> {
    return registry.metrics();
  }
}

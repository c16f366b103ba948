/** Steady decision traffic through a real Nest app, timed call by call, for the fault suite. */
import { randomUUID } from 'node:crypto';
import { type INestApplication, Logger, type LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { RateLimitModule, RateLimitService } from '../../lib/index.js';
import { type RateLimitRootOptions } from '../../lib/options/rate-limit.options.js';
import { type StoreErrorPolicy } from '../../lib/store-contract/store.interface.js';

export interface Sample {
  /** When the call started, ms since the run began. */
  at: number;
  latencyMs: number;
  allowed: boolean;
  degraded: StoreErrorPolicy | undefined;
  error: unknown;
}

/** Collects what the module logs under the `RateLimit` context. */
export class CapturingLogger implements LoggerService {
  readonly warnings: string[] = [];
  readonly messages: string[] = [];
  log(message: unknown, context?: string) {
    if (context === 'RateLimit') this.messages.push(String(message));
  }
  warn(message: unknown, context?: string) {
    if (context === 'RateLimit') this.warnings.push(String(message));
  }
  error() {}
  debug() {}
  verbose() {}
}

export async function createLimiterApp(
  options: RateLimitRootOptions,
  logger: CapturingLogger,
): Promise<INestApplication> {
  Logger.overrideLogger(logger);
  const ref = await Test.createTestingModule({
    imports: [RateLimitModule.forRoot(options)],
  }).compile();
  const app = ref.createNestApplication({ logger });
  await app.init();
  return app;
}

// High enough that the shared limit never rejects: what is measured is the store's health.
const ROOMY = { period: '1h', threshold: 1_000_000 } as const;

/**
 * Runs `workers` loops of back-to-back decisions until `stop()` resolves, each on its own key.
 * Bounded: it ends when stop resolves, or after `maxMs` whatever happens.
 */
export async function runTraffic(
  app: INestApplication,
  stop: Promise<void>,
  workers = 4,
  maxMs = 20_000,
) {
  const limiter = app.get(RateLimitService);
  const samples: Sample[] = [];
  const begin = performance.now();
  let stopped = false;
  void stop.then(() => (stopped = true));
  const worker = async () => {
    const key = `traffic:${randomUUID()}`;
    while (!stopped && performance.now() - begin < maxMs) {
      const started = performance.now();
      let sample: Sample;
      try {
        const d = await limiter.consume(key, ROOMY);
        sample = {
          at: started - begin,
          latencyMs: performance.now() - started,
          allowed: d.allowed,
          degraded: d.degraded,
          error: undefined,
        };
      } catch (error) {
        sample = {
          at: started - begin,
          latencyMs: performance.now() - started,
          allowed: false,
          degraded: undefined,
          error,
        };
      }
      samples.push(sample);
      await new Promise((r) => setTimeout(r, 2));
    }
  };
  await Promise.all(Array.from({ length: workers }, worker));
  return { samples, begin };
}

/** N sequential decisions on a fresh key against a threshold of `limit`: how many passed, and from where. */
export async function exactness(app: INestApplication, limit: number, attempts: number) {
  const limiter = app.get(RateLimitService);
  const key = `exact:${randomUUID()}`;
  const decisions = [];
  for (let i = 0; i < attempts; i++)
    decisions.push(await limiter.consume(key, { period: '1h', threshold: limit }));
  return {
    allowed: decisions.filter((d) => d.allowed).length,
    degraded: decisions.filter((d) => d.degraded).length,
  };
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Ours as an application uses it: RateLimitService from a real Nest app, default options. */
import 'reflect-metadata';
import { Test } from '@nestjs/testing';
import { Redis, type RedisOptions } from 'ioredis';
import { type RateLimitPolicy, RateLimitModule, RateLimitService } from '../../lib/index.js';
import { closeClient, type Limiter } from './limiter.js';

export interface OurLimiterOptions {
  readonly prefix: string;
  /** Passed as the same object on every call, as an application would hold it. */
  readonly policy: RateLimitPolicy;
  readonly clientOptions?: RedisOptions;
}

export async function ourLimiter(url: string, options: OurLimiterOptions): Promise<Limiter> {
  const client = new Redis(url, options.clientOptions ?? {});
  await client.ping();
  const moduleRef = await Test.createTestingModule({
    imports: [RateLimitModule.forRoot({ redis: client, keyPrefix: options.prefix })],
  }).compile();
  // Warnings stay on: an outage warning during a run means its numbers are not Redis's.
  const app = moduleRef.createNestApplication({ logger: ['error', 'warn'] });
  await app.init();
  const service = app.get(RateLimitService);
  const { policy } = options;
  let degraded = 0;
  return {
    client,
    decide: async (key) => {
      const decision = await service.consume(key, policy);
      if (decision.degraded !== undefined) degraded++;
      return decision.allowed;
    },
    // Our keys carry the caller's key as the hash tag: `<prefix>:{<key>}:<index>:<policy id>`.
    redisKeyMarker: (key) => `{${key}}`,
    degraded: () => degraded,
    close: async () => {
      await app.close();
      await closeClient(client);
    },
  };
}

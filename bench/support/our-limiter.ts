/** Ours as an application uses it: RateLimitService from a real Nest app, default options. */
import 'reflect-metadata';
import { Test } from '@nestjs/testing';
import { Redis, type RedisOptions } from 'ioredis';
import {
  type RateLimitDecision,
  type RateLimitPolicy,
  RateLimitModule,
  RateLimitService,
  RedisStore,
} from '../../lib/index.js';
import { type RedisClient } from '../../lib/stores/redis/clients/redis-client.js';
import { closeClient, connectNodeRedis, type Library, type Limiter } from './limiter.js';
import { connectGlide, connectIovalkey } from './valkey-limiters.js';

/** One decision as the application writes the call. */
export type Consume = (service: RateLimitService, key: string) => Promise<RateLimitDecision>;

export type OurLimiterOptions = {
  readonly prefix: string;
  /** Default ioredis. */
  readonly library?: Library;
  /** ioredis only. */
  readonly clientOptions?: RedisOptions;
  /** The store's `batchSize`; unset, the module's own store with the default. */
  readonly batchSize?: number;
  /** The store's `slotGroups` (see docs/redis.md, Slot groups). */
  readonly slotGroups?: number;
  /** A client connected already (a cluster's), instead of one of `library` to the URL. */
  readonly client?: RedisClient;
} & (
  | {
      /** Passed as the same object on every call, as an application would hold it. */
      readonly policy: RateLimitPolicy;
    }
  | {
      /** The call itself, for a row that writes it differently (a policy written inline). */
      readonly consume: Consume;
    }
);

/** A connected client of `library`, default options (ioredis: the row's). */
async function connect(library: Library, url: string, ioredisOptions?: RedisOptions) {
  if (library === 'node-redis') return connectNodeRedis(url);
  if (library === 'iovalkey') return connectIovalkey(url);
  if (library === 'glide') return connectGlide(url);
  const client = new Redis(url, ioredisOptions ?? {});
  await client.ping();
  return client;
}

export async function ourLimiter(url: string, options: OurLimiterOptions): Promise<Limiter> {
  // Every library's client goes in `redis:`: the module recognises each by its shape.
  const client =
    options.client ?? (await connect(options.library ?? 'ioredis', url, options.clientOptions));
  const { batchSize, slotGroups } = options;
  const moduleRef = await Test.createTestingModule({
    imports: [
      RateLimitModule.forRoot(
        batchSize === undefined && slotGroups === undefined
          ? { redis: client, keyPrefix: options.prefix }
          : {
              store: new RedisStore({ client: client as RedisClient, batchSize, slotGroups }),
              keyPrefix: options.prefix,
            },
      ),
    ],
  }).compile();
  // Warnings stay on: an outage warning during a run means its numbers are not Redis's.
  const app = moduleRef.createNestApplication({ logger: ['error', 'warn'] });
  await app.init();
  const service = app.get(RateLimitService);
  const consume = 'consume' in options ? options.consume : hoisted(options.policy);
  let degraded = 0;
  return {
    client,
    decide: async (key) => {
      const decision = await consume(service, key);
      if (decision.degraded !== undefined) degraded++;
      return decision.allowed;
    },
    // Our keys carry the caller's key as the hash tag: `<prefix>:{<key>}:<index>:<policy id>`.
    redisKeyMarker: (key) => `{${key}}`,
    degraded: () => degraded,
    close: async () => {
      await app.close();
      // The module leaves a client it was given open.
      if ('invokeScript' in client) client.close();
      else if ('quit' in client && !(client instanceof Redis)) await client.quit();
      else await closeClient(client as Parameters<typeof closeClient>[0]);
    },
  };
}

const hoisted =
  (policy: RateLimitPolicy): Consume =>
  (service, key) =>
    service.consume(key, policy);

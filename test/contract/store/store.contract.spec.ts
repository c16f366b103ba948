import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { MemoryStore, RedisStore } from '../../../lib/index.js';
import { ALL_CLIENT_KINDS, CLIENT_KINDS } from '../../support/clients.js';
import { consumeOne, TestClock, useRedis } from '../../support/stores.js';
import { policy, storeContract } from './store.suite.js';

describe('store contract on the memory store', () => {
  storeContract();
});

describe.each(ALL_CLIENT_KINDS)('store contract on the Redis store through %s', (kind) => {
  const redis = useRedis('redis');
  storeContract({ storeClient: () => redis().connect(kind), inspect: () => redis().client() });
});

describe.each(CLIENT_KINDS)(
  'store contract on the Redis store through %s, deciding with scripts (EVALSHA)',
  (kind) => {
    const redis = useRedis('redis');
    storeContract({
      storeClient: () => redis().connect(kind),
      inspect: () => redis().client(),
      functions: false,
    });
  },
);

describe('memory and Redis stores agree, decision by decision', () => {
  const redis = useRedis('redis');

  it('gives identical answers over a 600-step pseudo-random timeline', async () => {
    const clockA = new TestClock();
    const clockB = new TestClock();
    const memory = new MemoryStore({ clock: clockA.now });
    const shared = new RedisStore({ client: redis().shared, clock: clockB.now });
    const keys = [0, 1, 2].map(() => `agree:{${randomUUID()}}`);
    const policies = [policy('250ms', 3), policy('1s', 5), policy('3s', 2)];
    let seed = 42;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);

    for (let step = 0; step < 600; step++) {
      const gap = rand(4) === 0 ? rand(400) : rand(20) + rand(1000) / 1000;
      clockA.advance(gap);
      clockB.advance(gap);
      const which = rand(3);
      const cost = 1 + (rand(5) === 0 ? rand(policies[which].threshold) : 0);
      const fromMemory = await consumeOne(memory, keys[which], policies[which], cost);
      const fromRedis = await consumeOne(shared, keys[which], policies[which], cost);
      expect({ step, ...fromRedis }).toEqual({ step, ...fromMemory });
    }
  });
});

describe.each(ALL_CLIENT_KINDS)('the Redis store through %s', (kind) => {
  const redis = useRedis('redis');

  it('names the client library it runs on, as the logs do', async () => {
    const store = new RedisStore({ client: await redis().connect(kind) });
    expect(store.library).toBe(kind === 'glide' ? 'valkey-glide' : kind.replace(/@\d+$/, ''));
  });
});

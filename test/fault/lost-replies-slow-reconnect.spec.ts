/**
 * A reply lost when the connection resets, and a client that takes longer to reconnect than the
 * caller waits: the store cannot send the decision again in time, so the fallback answers it,
 * while Redis has counted it. Once the client is back, and while Redis still keeps the decision's
 * id, the store asks with one more copy (which, past the deadline, applies nothing) and gives back
 * what Redis ran: in the end Redis counts nothing the fallback answered.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { RedisStore } from '../../lib/index.js';
import { type RedisClient } from '../../lib/stores/redis/clients/redis-client.js';
import { resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import { closeClient } from '../support/clients.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { waitFor } from '../support/wait-for.js';

const TIMEOUT_MS = 200;
// The client's wait between attempts to reconnect: longer than the caller waits, shorter than
// Redis keeps the id (the deadline plus 500 ms). The proxy refuses connections meanwhile, so that
// a client whose first attempt is immediate (node-redis) waits too.
const RECONNECT_MS = 450;
const POLICY = resolvePolicy({ period: '1h', threshold: 1000 }, 'slow-reconnect');

const CLIENTS: Array<[string, (url: string) => Promise<RedisClient>]> = [
  [
    'ioredis, not resending what was in flight',
    async (url) => {
      const client = new Redis(url, {
        autoResendUnfulfilledCommands: false,
        retryStrategy: () => RECONNECT_MS,
      });
      client.on('error', () => {});
      await client.ping();
      return client;
    },
  ],
  [
    'node-redis',
    async (url) => {
      const client = createClient({ url, socket: { reconnectStrategy: () => RECONNECT_MS } });
      client.on('error', () => {});
      await client.connect();
      return client as unknown as RedisClient;
    },
  ],
];

describe.each(CLIENTS)('a reply lost, and a slow reconnect (%s)', (_name, open) => {
  let redis: TestRedis;
  let proxy: TcpProxy;
  let client: RedisClient | undefined;

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterEach(async () => {
    if (client !== undefined) await closeClient(client);
    await proxy?.close();
  });
  afterAll(async () => {
    await redis.stop();
  });

  it('gives back the decision Redis ran, once the client is back', async () => {
    proxy = await startTcpProxy(redis.port);
    client = await open(proxy.url);
    const store = new RedisStore({ client, answerWithinMs: TIMEOUT_MS });
    await store.warmUp();
    const key = `slow:{${randomUUID()}}`;
    // The deadline is learnt from replies: one decision before the fault.
    expect((await store.consume([key], [POLICY], [1])).allowed).toBe(true);

    proxy.refuseConnections(RECONNECT_MS / 2);
    const reset = proxy.resetMidReply();
    const lost = store.consume([key], [POLICY], [1]);
    await reset;
    // Redis ran it: two requests counted, while the caller is left without an answer.
    expect(await redis.shared.zcard(key)).toBe(2);
    await expect(lost).rejects.toThrow();

    await waitFor('the lost decision given back', 3000, async () => {
      const counted = await redis.shared.zcard(key);
      return counted === 1 || `${counted} counted`;
    });
    // Nothing more comes later: the copy that asked applied nothing.
    await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS + 600));
    expect(await redis.shared.zcard(key)).toBe(1);
  });
});

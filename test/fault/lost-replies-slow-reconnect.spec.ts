/**
 * A reply lost when the connection resets, and a client that takes longer to reconnect than the
 * caller waits: the store cannot send the decision again in time, so the fallback answers it,
 * while Redis has counted it. Once the client is back, and while Redis still keeps the decision's
 * id, the store asks with one more copy (which, past the deadline, applies nothing) and its
 * failure tells the resilient store what Redis ran, which gives it back as it gives back a late
 * reply: in the end Redis counts nothing the fallback answered.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { MemoryStore, RedisStore } from '../../lib/index.js';
import { ResilientStore } from '../../lib/stores/resilience/resilient.store.js';
import { type RedisClient } from '../../lib/stores/redis/clients/redis-client.js';
import { resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import { closeClient } from '../support/clients.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { waitFor } from '../support/wait-for.js';

const TIMEOUT_MS = 200;
// The client's wait between attempts to reconnect: longer than the caller waits, and well short
// of how long Redis keeps the id (the deadline plus 500 ms), so that a loaded machine's late
// timers still bring the client back while the copy can learn what Redis ran. The proxy refuses
// connections meanwhile, so that a client whose first attempt is immediate (node-redis) waits too.
const RECONNECT_MS = 300;
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

  /**
   * One decision whose reply is lost: whether the client came back while Redis still kept the
   * decision's id (its deadline plus 500 ms, less the copy's way there), and, when it did, the
   * decision given back.
   */
  async function loseOneReply(store: RedisStore): Promise<boolean> {
    const key = `slow:{${randomUUID()}}`;
    // The deadline is learnt from replies: one decision before the fault.
    expect((await store.consume([key], [POLICY], [1])).allowed).toBe(true);

    proxy.refuseConnections(RECONNECT_MS / 2);
    const reset = proxy.resetMidReply();
    // As the module puts it: behind the resilient store, whose fallback answers what fails.
    const resilient = new ResilientStore(store, {
      timeoutMs: TIMEOUT_MS,
      onStoreError: 'memory',
      fallback: new MemoryStore(),
      ownsPrimary: false,
      logger: { warn: () => {}, log: () => {} },
    });
    let backAt = Infinity;
    const events = client as unknown as NodeJS.EventEmitter;
    const onReady = () => (backAt = Math.min(backAt, performance.now()));
    events.on('ready', onReady);
    const sentAt = performance.now();
    const lost = resilient.consume([key], [POLICY], [1]);
    await reset;
    // Redis ran it: two requests counted, while the fallback answers the caller.
    expect(await redis.shared.zcard(key)).toBe(2);
    expect((await lost).degraded).toBe('memory');
    await waitFor('the client back', 10_000, async () => backAt < Infinity || 'not yet');
    events.off('ready', onReady);
    // A loaded machine can hold the client up past the id's life: then the store cannot learn
    // what Redis ran, as documented, and the caller tries again.
    if (backAt - sentAt > TIMEOUT_MS + 500 - 150) {
      await resilient.close();
      return false;
    }

    await waitFor('the lost decision given back', 3000, async () => {
      const counted = await redis.shared.zcard(key);
      return counted === 1 || `${counted} counted`;
    });
    // Nothing more comes later: the copy that asked applied nothing.
    await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS + 600));
    expect(await redis.shared.zcard(key)).toBe(1);
    await resilient.close();
    return true;
  }

  it('gives back the decision Redis ran, once the client is back', async () => {
    proxy = await startTcpProxy(redis.port);
    client = await open(proxy.url);
    const store = new RedisStore({ client, answerWithinMs: TIMEOUT_MS });
    await store.warmUp();
    let attempts = 1;
    while (!(await loseOneReply(store))) {
      if (++attempts > 3) throw new Error('the client never came back while Redis kept the id');
    }
  });
});

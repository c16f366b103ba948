/**
 * The parts the store uses to send a decision again after its reply was lost: which failures mean
 * the connection broke with the command in flight, and the shared wait for the client to be ready
 * again, each decision until its own deadline. Real clients, on a real server or on a port where
 * nothing listens.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { type AddressInfo, connect, createServer } from 'node:net';
import { createClient, SocketClosedUnexpectedlyError } from 'redis';
import { RedisStore } from '../../lib/index.js';
import { type RedisClient } from '../../lib/stores/redis/clients/redis-client.js';
import { type ValkeyGlideClient } from '../../lib/stores/redis/clients/glide.client.js';
import { CLIENT_DEFAULTS } from '../../lib/module/store-factory.js';
import {
  ConnectionLostError,
  replyIfRun,
  lostInFlight,
  ReconnectWaiters,
} from '../../lib/stores/redis/lost-replies.js';
import { scriptClientFor } from '../../lib/stores/redis/clients/redis-client.js';
import { closeClient } from '../support/clients.js';
import { freePort, startRedis, type TestRedis } from '../support/redis-server.js';

const waitersOf = (client: RedisClient) => new ReconnectWaiters(scriptClientFor(client)!);

describe('failures that mean a reply was lost', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis.stop();
  });

  it('are a broken connection, never an error Redis answered', async () => {
    const ioredis = redis.client();
    const refused = await ioredis.call('NO-SUCH-COMMAND').catch((e: unknown) => e);
    const nodeRedis = await redis.connect('node-redis');
    const nodeRefused = await (nodeRedis as ReturnType<typeof createClient>)
      .sendCommand(['NO-SUCH-COMMAND'])
      .catch((e: unknown) => e);
    const quit = new Redis(redis.url);
    await quit.quit();
    const closed = await quit.get('k').catch((e: unknown) => e);

    expect(lostInFlight(refused)).toBe(false);
    expect(lostInFlight(nodeRefused)).toBe(false);
    expect(lostInFlight(new Error('OOM command not allowed'))).toBe(false);
    expect(lostInFlight(closed)).toBe(true);
    expect(lostInFlight(new SocketClosedUnexpectedlyError())).toBe(true);
    expect(lostInFlight(new ConnectionLostError())).toBe(true);
    expect(lostInFlight(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))).toBe(
      true,
    );
  });

  it("include a socket's own error, which Node makes outside the test's realm", async () => {
    // node-redis rejects what awaits a reply with the socket's error itself.
    const server = createServer((socket) => socket.resetAndDestroy());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const error = await new Promise<unknown>((resolve) => {
      const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
      socket.on('error', resolve);
      socket.write('PING\r\n');
    });
    await new Promise((resolve) => server.close(resolve));

    expect(error).toMatchObject({ code: 'ECONNRESET' });
    expect(lostInFlight(error)).toBe(true);
  });

  it('the waiters wake together once the client is ready again', async () => {
    const client = new Redis(redis.url, { retryStrategy: () => 50 });
    client.on('error', () => {});
    await client.ping();
    const waiters = waitersOf(client);
    expect(await waiters.ready(performance.now() + 10)).toBe(true);

    const closed = new Promise((resolve) => client.once('close', resolve));
    client.disconnect(true);
    await closed;
    expect(client.status).not.toBe('ready');
    const until = performance.now() + 5000;
    const woken = await Promise.all(Array.from({ length: 5 }, () => waiters.ready(until)));
    expect(woken).toEqual([true, true, true, true, true]);
    expect(client.status).toBe('ready');
    client.disconnect();
  });
});

describe('a decision answered by the fallback after its reply was lost', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis.stop();
  });

  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('is asked about once its deadline has passed, even when it failed before it', async () => {
    // Every copy lost too: the fallback answers before the deadline, while Redis may have run it.
    // A copy sent then could still apply it; only one sent after it can tell.
    const waiters = waitersOf(redis.client());
    const deadlineMs = performance.now() + 150;
    const asked: number[] = [];
    const givenBack: number[][] = [];
    const copy = async () => {
      asked.push(performance.now());
      return [1, 1, 41];
    };
    void replyIfRun(new ConnectionLostError(), copy, waiters, deadlineMs)?.then(
      (r) => r && givenBack.push(r),
    );
    await sleep(75);
    expect(asked).toEqual([]);
    await sleep(200);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toBeGreaterThanOrEqual(deadlineMs);
    expect(givenBack).toEqual([[1, 1, 41]]);
  });

  it('is left alone when Redis says it never ran it, or when its failure was no lost reply', async () => {
    const waiters = waitersOf(redis.client());
    const asked: string[] = [];
    const past = performance.now() - 1;
    const lost = replyIfRun(
      new ConnectionLostError(),
      async () => (asked.push('lost'), [-1, 0]),
      waiters,
      past,
    );
    const refused = replyIfRun(
      new Error('OOM command not allowed'),
      async () => (asked.push('refused'), [1]),
      waiters,
      past,
    );
    expect(refused).toBeUndefined();
    expect(await lost).toBeUndefined();
    await sleep(50);
    expect(asked).toEqual(['lost']);
  });
});

describe("the store's own commands on an ioredis client that does not resend", () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis.stop();
  });

  it('are, on GLIDE, the ConnectionError of a command in flight, not an error reply', async () => {
    const glide = (await redis.connect('glide')) as ValkeyGlideClient;
    const refused = await glide.customCommand(['NO-SUCH-COMMAND']).catch((e: unknown) => e);
    const admin = redis.client();
    const id = await glide.customCommand(['CLIENT', 'ID']);
    // A write waits in the paused server; then its connection is killed under it.
    await admin.client('PAUSE', 2000, 'WRITE');
    const inFlight = glide.customCommand(['SET', 'lost', '1']).catch((e: unknown) => e);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await admin.client('KILL', 'ID', String(id));
    const lost = await inFlight;
    await admin.client('UNPAUSE');

    expect(lostInFlight(refused)).toBe(false);
    expect(lost).toMatchObject({ name: 'ConnectionError' });
    expect(lostInFlight(lost)).toBe(true);
    // GLIDE's requestTimeout gave up on the reply, not Redis on the command.
    expect(lostInFlight(Object.assign(new Error('timed out'), { name: 'TimeoutError' }))).toBe(
      true,
    );
    expect(lostInFlight(new Error('ERR the operation timed out'))).toBe(false);
    await closeClient(glide);
  });

  it('settle when the connection closes with them in flight', async () => {
    const client = new Redis(redis.url, {
      ...CLIENT_DEFAULTS,
      autoResendUnfulfilledCommands: false,
    });
    client.on('error', () => {});
    await new Promise((resolve) => client.once('ready', resolve));
    const store = new RedisStore({ client, answerWithinMs: 1000 });
    const admin = redis.client();
    const id = await client.client('ID');
    // FUNCTION LOAD writes, so it waits in Redis; then its connection is killed under it.
    await admin.client('PAUSE', 2000, 'WRITE');
    const warming = store.warmUp().then(() => 'settled');
    await new Promise((resolve) => setTimeout(resolve, 100));
    const closed = new Promise((resolve) => client.once('close', resolve));
    await admin.client('KILL', 'ID', String(id));
    await closed;
    const within = new Promise((resolve) => setTimeout(() => resolve('pending'), 1000).unref());
    expect(await Promise.race([warming, within])).toBe('settled');
    await admin.client('UNPAUSE');
    client.disconnect();
  });
});

describe('waiting for a client that does not come back', () => {
  it('gives each waiter up at its own deadline, and never resolves true', async () => {
    const port = await freePort();
    const client = new Redis({ port, retryStrategy: () => 50, enableOfflineQueue: false });
    client.on('error', () => {});
    const waiters = waitersOf(client);
    const start = performance.now();
    const gaveUpAt: number[] = [];
    const answers = await Promise.all(
      [150, 400].map((ms) =>
        waiters.ready(start + ms).then((ready) => {
          gaveUpAt.push(performance.now() - start);
          return ready;
        }),
      ),
    );
    expect(answers).toEqual([false, false]);
    expect(gaveUpAt[0]).toBeGreaterThanOrEqual(149);
    expect(gaveUpAt[1]).toBeGreaterThanOrEqual(399);
    // Generous: a busy machine may be late, but not by a whole period.
    expect(gaveUpAt[1] - gaveUpAt[0]).toBeGreaterThan(100);
    expect(await waiters.ready(performance.now() - 1)).toBe(false);
    client.disconnect();
  });
});

/**
 * What a Valkey GLIDE client needs beyond the suites every client runs: GLIDE reconnects on its
 * own and queues commands meanwhile, without telling anyone, logs every error reply, and decodes
 * replies by the client's own settings.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { Decoder, GlideClient } from '@valkey/valkey-glide';
import { RedisStore } from '../../../lib/index.js';
import { StoreNotConnectedError } from '../../../lib/stores/redis/clients/script-client.js';
import { resolvePolicy } from '../../../lib/policy/rate-limit.policy.js';
import { closeClient } from '../../support/clients.js';
import { track } from '../../support/glide-clients.js';
import { useRedis } from '../../support/stores.js';
import { waitFor } from '../../support/wait-for.js';
import '../../support/glide-logger.js';
import { createUserWithout } from '../../support/acl-users.js';

const POLICY = resolvePolicy({ period: '1h', threshold: 100 }, 'glide');
const LEASE = resolvePolicy({ algorithm: 'concurrency', threshold: 1, period: '1m' }, 'lease');

describe('the Redis store on a GLIDE client', () => {
  const redis = useRedis('redis');

  it('loads the function library once: a second instance finds it and sends no FUNCTION LOAD', async () => {
    await redis().shared.function('FLUSH');
    await redis().shared.config('RESETSTAT');
    for (let i = 0; i < 2; i++) {
      const store = new RedisStore({ client: await redis().connect('glide') });
      await store.warmUp();
      expect(store.usesFunctions).toBe(true);
      await closeClient(store.client);
    }
    const stats = await redis().shared.info('commandstats');
    // One load, and no failed one, which GLIDE would log as a warning.
    expect(/cmdstat_function\|load:calls=(\d+),.*failed_calls=(\d+)/.exec(stats)?.slice(1)).toEqual(
      ['1', '0'],
    );
  });

  it('loads the library for a user who may load functions but not list them', async () => {
    await redis().shared.function('FLUSH');
    const user = await createUserWithout(redis().shared, ['-function|list'], 'loader');
    const store = new RedisStore({ client: await redis().connect('glide', { user }) });
    await store.warmUp();
    expect(store.usesFunctions).toBe(true);
    expect((await store.consume([`acl:{${randomUUID()}}`], [POLICY], [1])).allowed).toBe(true);
    await closeClient(store.client);
  });

  it('decides, releases leases and reads the memory policy on a client that decodes replies as bytes', async () => {
    const client = track(
      await GlideClient.createClient({
        addresses: [{ host: '127.0.0.1', port: redis().port }],
        defaultDecoder: Decoder.Bytes,
        requestTimeout: 2000,
      }),
    );
    const store = new RedisStore({ client });
    const key = `lease:{${randomUUID()}}`;
    const held = await store.consume([key], [LEASE], [1]);
    expect(held.allowed).toBe(true);
    expect((await store.consume([key], [LEASE], [1])).allowed).toBe(false);
    await store.release([key], [LEASE], [1], held);
    expect((await store.consume([key], [LEASE], [1])).allowed).toBe(true);
    expect(await store.memoryPolicies()).toEqual([{ policy: 'noeviction', maxmemory: 0 }]);
    await closeClient(client);
  });

  it('sends a decision again when GLIDE gives up on its reply before the caller does', async () => {
    const client = track(
      await GlideClient.createClient({
        addresses: [{ host: '127.0.0.1', port: redis().port }],
        requestTimeout: 200,
      }),
    );
    const store = new RedisStore({ client, answerWithinMs: 2000 });
    const key = `slow:{${randomUUID()}}`;
    // The decision waits in the paused server past GLIDE's requestTimeout, and runs after.
    await redis().shared.client('PAUSE', 300, 'WRITE');
    const decision = await store.consume([key], [POLICY], [1]);
    expect(decision).toMatchObject({ allowed: true, remaining: 99 });
    // The copy was answered by the decision's id: Redis counted the request once.
    expect((await store.consume([key], [POLICY], [1])).remaining).toBe(98);
    await closeClient(client);
  });

  it('sends nothing while the server is down, and decides again once it is back', async () => {
    const store = new RedisStore({ client: await redis().connect('glide'), answerWithinMs: 500 });
    const up = `up:{${randomUUID()}}`;
    expect((await store.consume([up], [POLICY], [1])).allowed).toBe(true);
    await redis().kill('SIGKILL');
    // The first decision after the crash is what tells the client that the link is down.
    await expect(store.consume([up], [POLICY], [1])).rejects.toThrow();
    expect(store.connected).toBe(false);

    const down = `down:{${randomUUID()}}`;
    const began = performance.now();
    for (let i = 0; i < 20; i++) {
      await expect(store.consume([down], [POLICY], [1])).rejects.toBeInstanceOf(
        StoreNotConnectedError,
      );
    }
    // Refused at once: not queued in GLIDE until its requestTimeout (2 s, in test/support/clients.ts),
    // which even the first of the twenty would have waited out. The bound leaves room for a busy
    // machine.
    expect(performance.now() - began).toBeLessThan(1000);

    await redis().restart();
    await waitFor('the client to be ready again', 3000, async () =>
      store.connected ? true : 'not connected',
    );
    expect((await store.consume([up], [POLICY], [1])).allowed).toBe(true);
    // Nothing decided while the server was down reached it afterwards.
    expect(await redis().shared.keys('down:*')).toEqual([]);
    await closeClient(store.client);
  });
});

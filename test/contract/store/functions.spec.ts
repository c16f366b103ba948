/**
 * Decisions as Redis Functions: loaded once, called with FCALL, loaded again when the server loses
 * them, and replaced by scripts for good where the server refuses `FUNCTION`.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { RedisStore } from '../../../lib/index.js';
import { resolvePolicy } from '../../../lib/policy/rate-limit.policy.js';
import { DECISION_LIBRARY } from '../../../lib/stores/redis/decisions/scripts.js';
import { CLIENT_KINDS } from '../../support/clients.js';
import { useRedis } from '../../support/stores.js';
import { waitFor } from '../../support/wait-for.js';
import { asUserWithout } from '../../support/acl-users.js';

const POLICY = resolvePolicy({ period: '1h', threshold: 5 }, 'functions');

describe.each(CLIENT_KINDS)('Redis Functions through %s', (kind) => {
  const redis = useRedis('redis');

  async function calls(): Promise<Record<string, number>> {
    const info = await redis().shared.info('commandstats');
    const counts: Record<string, number> = { fcall: 0, evalsha: 0, eval: 0 };
    for (const [, name, n] of info.matchAll(/cmdstat_(fcall|evalsha|eval):calls=(\d+)/g)) {
      counts[name] = Number(n);
    }
    return counts;
  }

  const remaining = async (store: RedisStore, key: string) =>
    (await store.consume([key], [POLICY], [1])).remaining;

  /** Six decisions on a new key: what each left, and the FCALLs and scripts they were sent as. */
  async function sixDecisions(store: RedisStore) {
    const key = `fn:{${randomUUID()}}`;
    const before = await calls();
    const left: number[] = [];
    for (let i = 0; i < 6; i++) left.push(await remaining(store, key));
    const after = await calls();
    const scripts = after.evalsha - before.evalsha + after.eval - before.eval;
    return { left, fcall: after.fcall - before.fcall, scripts };
  }

  async function libraryLoaded(): Promise<boolean> {
    const listed = await redis().shared.call(
      'FUNCTION',
      'LIST',
      'LIBRARYNAME',
      DECISION_LIBRARY.name,
    );
    return JSON.stringify(listed).includes(DECISION_LIBRARY.name);
  }

  it('loads the library at warm-up and sends each decision as one FCALL', async () => {
    const store = new RedisStore({ client: await redis().connect(kind) });
    await store.warmUp();
    expect(store.usesFunctions).toBe(true);
    expect(await libraryLoaded()).toBe(true);
    expect(await sixDecisions(store)).toEqual({ left: [4, 3, 2, 1, 0, 0], fcall: 6, scripts: 0 });
  });

  it('answers as a script while the library is gone, and loads it again', async () => {
    const store = new RedisStore({ client: await redis().connect(kind) });
    await store.warmUp();
    const key = `fn:{${randomUUID()}}`;
    expect(await remaining(store, key)).toBe(4);
    await redis().shared.call('FUNCTION', 'FLUSH');

    // Every answer stays exact meanwhile: the count goes on where it was.
    expect(await remaining(store, key)).toBe(3);
    await waitFor(
      'the library loaded again',
      5000,
      async () => (await libraryLoaded()) || 'not yet',
    );
    await waitFor('decisions back on FCALL', 5000, async () => store.usesFunctions || 'not yet');
    const before = await calls();
    expect(await remaining(store, key)).toBe(2);
    expect((await calls()).fcall - before.fcall).toBe(1);
  });

  it('decides with scripts for good where FUNCTION is refused', async () => {
    // Everything but FUNCTION, as a managed service that disables it would allow.
    await asUserWithout(redis().shared, ['-function'], async (user) => {
      const store = new RedisStore({ client: await redis().connect(kind, { user }) });
      await store.warmUp();
      expect(store.usesFunctions).toBe(false);
      expect(await sixDecisions(store)).toEqual({
        left: [4, 3, 2, 1, 0, 0],
        fcall: 0,
        scripts: 6,
      });
      expect(store.usesFunctions).toBe(false);
    });
  });

  it('decides with scripts when told to, on a server that has Functions', async () => {
    const store = new RedisStore({ client: await redis().connect(kind), functions: false });
    await store.warmUp();
    expect(store.usesFunctions).toBe(false);
    const before = await calls();
    expect(await remaining(store, `fn:{${randomUUID()}}`)).toBe(4);
    expect((await calls()).fcall - before.fcall).toBe(0);
  });
});

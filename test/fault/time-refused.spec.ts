/**
 * Some managed services refuse `TIME` inside scripts. Decisions read their time there, so every
 * one of them would fail: instead the store learns of the refusal once, warns once, and sends its
 * estimate of Redis's clock with each decision, read outside scripts (TIME, else INFO server,
 * else this machine's clock). A Redis ACL user without `time` is refused exactly so, and the plain
 * TIME command too: decisions through that user must stay exact, as functions and as scripts.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { Logger, type LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { type Redis } from 'ioredis';
import { RateLimitModule, RateLimitService, RedisStore } from '../../lib/index.js';
import { resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import { CLOCK_DOCS } from '../../lib/stores/redis/caller-clock.js';
import { keySlot } from '../../lib/stores/redis/key-slot.js';
import { policyArg } from '../../lib/stores/redis/decisions/policy-args.js';
import { DECISION_LIBRARY, DECISION_SCRIPTS } from '../../lib/stores/redis/decisions/scripts.js';
import { CLIENT_KINDS, openClient } from '../support/clients.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { useCluster } from '../support/stores.js';
import { waitFor } from '../support/wait-for.js';
import { createUserWithout } from '../support/acl-users.js';

const LIMIT = 5;
const POLICY = resolvePolicy({ period: '1h', threshold: LIMIT }, 'clock');

/** What is logged under the `RateLimit` context. */
class Logs implements LoggerService {
  readonly warnings: string[] = [];
  log() {}
  warn(message: unknown, context?: string) {
    if (context === 'RateLimit') this.warnings.push(String(message));
  }
  error() {}
  debug() {}
  verbose() {}
  get clock(): string[] {
    return this.warnings.filter((w) => w.includes('TIME inside scripts'));
  }
}

// GLIDE sends INFO as it connects, and gives up on a user that may not run it: a user without
// INFO cannot use GLIDE at all, so that case runs on the other clients.
const WITHOUT_GLIDE = CLIENT_KINDS.filter((kind) => kind !== 'glide');

const USERS = {
  'TIME refused, INFO allowed': { acl: ['-time'], read: 'INFO server', kinds: CLIENT_KINDS },
  'TIME and INFO refused': {
    acl: ['-time', '-info'],
    read: "this machine's clock",
    kinds: WITHOUT_GLIDE,
  },
};

let redis: TestRedis;
let logs: Logs;
beforeAll(async () => {
  redis = await startRedis();
  await redis.shared.call('FUNCTION', 'LOAD', 'REPLACE', DECISION_LIBRARY.code);
});
afterAll(async () => {
  await redis.stop();
});
beforeEach(() => {
  logs = new Logs();
  Logger.overrideLogger(logs);
});
afterEach(() => {
  Logger.overrideLogger(false);
});

/** An ACL user that may do everything but `refused`; deleted after the block. */
function useUser(refused: readonly string[]) {
  const user = { name: '', password: '' };
  beforeAll(async () => {
    Object.assign(user, await createUserWithout(redis.shared, refused, 'clock'));
  });
  afterAll(async () => {
    await redis.shared.call('ACL', 'DELUSER', user.name);
  });
  return user;
}

/**
 * How often `user` was refused TIME as a plain command (the store's first try at reading the
 * clock), as the ACL log counts it; refusals inside scripts are logged apart.
 */
async function timeReads(user: string): Promise<number> {
  // The whole log: ACL LOG alone shows its 10 latest entries.
  const log = (await redis.shared.call('ACL', 'LOG', '1000')) as unknown[][];
  let reads = 0;
  for (const entry of log) {
    const fields = new Map<unknown, unknown>();
    for (let i = 0; i + 1 < entry.length; i += 2) fields.set(entry[i], entry[i + 1]);
    const ours = fields.get('username') === user && fields.get('object') === 'time';
    if (ours && fields.get('context') === 'toplevel') reads += Number(fields.get('count'));
  }
  return reads;
}

describe.each(Object.entries(USERS))('a user with %s', (_name, { acl, read, kinds }) => {
  const user = useUser(acl);

  describe.each(kinds)('through %s', (kind) => {
    it.each([true, false])('decides exactly, warning once (functions: %s)', async (functions) => {
      const client = await redis.connect(kind, { user });
      const store = new RedisStore({ client, functions, answerWithinMs: 1000 });
      await store.warmUp();
      expect(store.usesFunctions).toBe(functions);
      const key = `clock:{${randomUUID()}}`;
      const allowed: boolean[] = [];
      for (let i = 0; i < LIMIT + 3; i++) {
        allowed.push((await store.consume([key], [POLICY], [1])).allowed);
      }
      expect(allowed).toEqual([...Array(LIMIT).fill(true), false, false, false]);
      expect(logs.clock).toHaveLength(1);
      expect(logs.clock[0]).toContain(read);
      expect(logs.clock[0]).toContain(CLOCK_DOCS);
    });
  });

  it('decides exactly when the first decisions meet the refusal together', async () => {
    const client = await redis.connect('node-redis', { user });
    // No warm-up: a burst of decisions is the first to learn.
    const store = new RedisStore({ client, answerWithinMs: 1000 });
    const key = `clock:{${randomUUID()}}`;
    const decisions = await Promise.all(
      Array.from({ length: LIMIT + 3 }, () => store.consume([key], [POLICY], [1])),
    );
    expect(decisions.filter((d) => d.allowed)).toHaveLength(LIMIT);
    expect(await redis.shared.zcard(key)).toBe(LIMIT);
    expect(logs.clock).toHaveLength(1);
  });
});

describe('through the module', () => {
  const user = useUser(['-time']);

  it.each(CLIENT_KINDS)(
    'a client handed over decides exactly, and one warning says why (%s)',
    async (kind) => {
      const client = await redis.connect(kind, { user });
      const ref = await Test.createTestingModule({
        imports: [RateLimitModule.forRoot({ redis: client, keyPrefix: `clock-${randomUUID()}` })],
      }).compile();
      const app = ref.createNestApplication({ logger: logs });
      await app.init();
      try {
        const limiter = app.get(RateLimitService);
        const decisions = [];
        for (let i = 0; i < LIMIT + 1; i++)
          decisions.push(await limiter.consume('user', { threshold: LIMIT }));
        expect(decisions.map((d) => d.degraded)).toEqual(Array(LIMIT + 1).fill(undefined));
        expect(decisions.map((d) => d.allowed)).toEqual([...Array(LIMIT).fill(true), false]);
      } finally {
        await app.close();
      }
      expect(logs.clock).toHaveLength(1);
    },
  );
});

describe('the clock is read again after a reconnect', () => {
  const user = useUser(['-time']);

  // GLIDE reconnects without a word when no command was in flight, so its store cannot tell a
  // reconnection happened; the read every minute bounds its drift instead (docs/redis.md#clock).
  it.each(WITHOUT_GLIDE)('through %s', async (kind) => {
    const client = await redis.connect(kind, { user });
    const store = new RedisStore({ client, answerWithinMs: 1000 });
    await store.warmUp();
    const key = `clock:{${randomUUID()}}`;
    let decided = 0;
    const decide = async () => {
      await store.consume([key], [POLICY], [1]);
      decided++;
    };
    await decide();
    const reads = await timeReads(user.name);
    expect(reads).toBeGreaterThanOrEqual(1);
    await redis.shared.call('CLIENT', 'KILL', 'USER', user.name);
    await waitFor('the store deciding again', 5000, () =>
      decide().then(
        () => true,
        () => 'not yet',
      ),
    );
    await decide();
    // Read once for the new connection, whichever decision came first.
    expect(await timeReads(user.name)).toBe(reads + 1);
    expect(await redis.shared.zcard(key)).toBe(decided);
    // Warned at the warm-up, not again.
    expect(logs.clock).toHaveLength(1);
  });
});

describe.each([
  [
    'a function',
    (c: Redis, keys: string[], args: string[]) =>
      c.fcall(DECISION_LIBRARY.fn, keys.length, ...keys, ...args),
  ],
  [
    'a script',
    (c: Redis, keys: string[], args: string[]) =>
      c.eval(DECISION_SCRIPTS.mixed.lua, keys.length, ...keys, ...args),
  ],
])('the caller-clock form, as %s', (_mode, send) => {
  const user = useUser(['-time']);
  let client: Redis;
  beforeAll(async () => {
    client = (await openClient(
      'ioredis',
      { host: '127.0.0.1', port: redis.port },
      { user },
    )) as Redis;
  });
  afterAll(async () => {
    client.disconnect();
  });

  const serverMicros = async () => {
    const [s, us] = await redis.shared.time();
    return Number(s) * 1_000_000 + Number(us);
  };
  const fresh = () => {
    const tag = `clock:{${randomUUID()}}`;
    return { key: `${tag}:0:sw`, id: `${tag}:id:${randomUUID().slice(0, 8)}` };
  };
  const arg = policyArg(POLICY, 1);

  it('answers -2 and does nothing where TIME is refused', async () => {
    const { key, id } = fresh();
    expect(await send(client, [key, id], ['c', '', arg])).toEqual([-2]);
    expect(await redis.shared.exists(key, id)).toBe(0);
  });

  it('decides at the time it carries, before its deadline', async () => {
    const { key, id } = fresh();
    const now = await serverMicros();
    const reply = (await send(
      client,
      [key, id],
      ['c', `c${now}:${now + 5_000_000}`, arg],
    )) as number[];
    expect(reply[0]).toBe(1);
    expect(reply[1 + 4]).toBe(now);
    expect(await redis.shared.zcard(key)).toBe(1);
    // The id is kept, and answers a copy.
    expect(await send(client, [key, id], ['c', `c${now}:${now + 5_000_000}`, arg])).toEqual(reply);
    expect(await redis.shared.zcard(key)).toBe(1);
  });

  it("refuses a decision past its deadline on Redis's clock, and records nothing", async () => {
    const { key, id } = fresh();
    const now = await serverMicros();
    // The time it carries is in the past too, as a decision that waited would carry.
    const reply = (await send(
      client,
      [key, id],
      ['c', `c${now - 2000}:${now - 1000}`, arg],
    )) as number[];
    expect(reply).toEqual([-1, now - 2000]);
    expect(await redis.shared.exists(key, id)).toBe(0);
  });
});

describe('on a cluster whose default user may not run TIME', () => {
  // Nodes of its own: the default user of a cluster the tests share must keep TIME.
  const cluster = useCluster({ replicas: 0, own: true });
  beforeAll(async () => {
    for (const node of cluster().nodes) {
      await cluster().admin(node).call('ACL', 'SETUSER', 'default', '-time');
    }
  });

  it.each(CLIENT_KINDS)('decides exactly on every master, warning once (%s)', async (kind) => {
    const store = new RedisStore({ client: await cluster().connect(kind), answerWithinMs: 1000 });
    await store.warmUp();
    // Two keys on each master, so that every master decides some.
    const masters = await cluster().masters();
    const keys = masters.flatMap((master) => keysServedBy(master.slots, 2));
    for (const key of keys) {
      const allowed: boolean[] = [];
      for (let i = 0; i < LIMIT + 1; i++) {
        allowed.push((await store.consume([key], [POLICY], [1])).allowed);
      }
      expect(allowed).toEqual([...Array(LIMIT).fill(true), false]);
    }
    // Some clients learn the slot map only once asked (GLIDE).
    await waitFor('the slot map', 5000, async () =>
      keys.every((key) => store.nodeOf([key]) !== '') ? true : 'some slots unknown',
    );
    expect(new Set(keys.map((key) => store.nodeOf([key]))).size).toBe(masters.length);
    expect(logs.clock).toHaveLength(1);
    expect(logs.clock[0]).toContain('read with INFO server');
  });
});

/** `count` keys, each under a hash tag of its own, whose slots fall in `slots`. */
function keysServedBy(slots: ReadonlyArray<readonly [number, number]>, count: number): string[] {
  const keys: string[] = [];
  while (keys.length < count) {
    const key = `clock:{${randomUUID()}}`;
    const slot = keySlot(key);
    if (slots.some(([from, to]) => slot >= from && slot <= to)) keys.push(key);
  }
  return keys;
}

/**
 * The usual decision keeps its id in the function library's memory instead of an id key: a copy
 * answers what the first one decided and applies nothing, and a copy that reaches a memory that
 * began again (a restart, a library loaded afresh) is refused, applying nothing, rather than
 * applied a second time. Checked on the functions with the copies sent by hand, then through the
 * store.
 */
import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from '@jest/globals';
import { type Redis } from 'ioredis';
import { resolvePolicy } from '../../../lib/policy/rate-limit.policy.js';
import { policyArg } from '../../../lib/stores/redis/decisions/policy-args.js';
import { DECISION_LIBRARY } from '../../../lib/stores/redis/decisions/scripts.js';
import { RedisStore } from '../../../lib/stores/redis/redis.store.js';
import { CLIENT_KINDS } from '../../support/clients.js';
import { useRedis } from '../../support/stores.js';
import { asUserWithout } from '../../support/acl-users.js';

// Windows of 30 days, aligned to the epoch: no test here runs across the end of one, which would
// expire the counts it reads (an hour's did, once).
const POLICY = resolvePolicy({ algorithm: 'fixed-window', period: '30d', threshold: 5 }, 'memory');
const ARG = policyArg(POLICY, 1);

describe('the library memory of decision ids', () => {
  const redis = useRedis('redis');
  let client: Redis;

  beforeEach(async () => {
    client = redis().shared;
    await client.call('FUNCTION', 'LOAD', 'REPLACE', DECISION_LIBRARY.code);
  });

  const epoch = async () => String(await client.call('FCALL_RO', DECISION_LIBRARY.epochFn, '0'));
  const redisMicros = async (ms: number) => {
    const [s, us] = await client.time();
    return String(Number(s) * 1_000_000 + Number(us) + ms * 1000);
  };
  const one = (key: string, args: string[]) =>
    client.fcall(DECISION_LIBRARY.oneFn, 1, key, ...args) as Promise<number[]>;
  const count = async (key: string) => Number(await client.get(key)) % 2 ** 30;
  // An id: its sender, and that sender's count.
  let sent = 0;
  const id = () => [`sender-${process.pid}`, String(sent++)];
  const keys = (n: number) =>
    Array.from({ length: n }, () => `memory:{${randomUUID()}}:0:fw:5-per-30d`);

  it('answers a copy with what the first one decided, applying nothing', async () => {
    const [key] = keys(1);
    const args = [await redisMicros(10_000), ARG, await epoch(), ...id()];
    const first = await one(key, args);
    expect(first[0]).toBe(1);
    expect(await one(key, args)).toEqual(first);
    expect(await count(key)).toBe(1);
    // Another id is another decision.
    await one(key, [args[0], ARG, args[2], ...id()]);
    expect(await count(key)).toBe(2);
    // Nothing but the state was written.
    expect(await client.keys(`${key.slice(0, key.indexOf('}') + 1)}*`)).toEqual([key]);
  });

  it('refuses a copy sent under an epoch that ended, applying nothing', async () => {
    const [key] = keys(1);
    const args = [await redisMicros(10_000), ARG, await epoch(), ...id()];
    expect((await one(key, args))[0]).toBe(1);
    // Loaded afresh, the library begins a new memory: the first decision may have applied,
    // so its copy must not apply again, and cannot be told from a decision that did not.
    await client.call('FUNCTION', 'LOAD', 'REPLACE', DECISION_LIBRARY.code);
    const renewed = await epoch();
    expect(renewed).not.toBe(args[2]);
    const copy = await one(key, args);
    expect(copy[0]).toBe(-3);
    expect(await count(key)).toBe(1);
    expect((await one(key, [args[0], ARG, renewed, args[3], args[4]]))[0]).toBe(1);
    expect(await count(key)).toBe(2);
  });

  it('keeps nothing for a rejected decision, and forgets a reply once its copies can no longer come', async () => {
    const [key] = keys(1);
    const known = await epoch();
    // A deadline 50 ms away keeps the reply 550 ms.
    const args = [await redisMicros(50), ARG, known, ...id()];
    expect((await one(key, args))[0]).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 700));
    // A later copy is late, as it would be with an id key that expired.
    expect((await one(key, args))[0]).toBe(-1);
    expect(await count(key)).toBe(1);
    // A rejected decision keeps nothing: its copy, in time, decides again.
    const full = resolvePolicy({ algorithm: 'fixed-window', period: '30d', threshold: 1 }, 'full');
    const rejected = [await redisMicros(10_000), policyArg(full, 1), known, ...id()];
    expect((await one(key, rejected))[0]).toBe(0);
    expect((await one(key, rejected))[0]).toBe(0);
    expect(await count(key)).toBe(1);
  });

  // 200,000 calls take a busy machine more than jest's 30 s: the deadline, and the test's time,
  // leave it minutes.
  it('starts a new epoch rather than hold more than it may, so a forgotten copy is refused', async () => {
    const [key] = keys(1);
    const known = await epoch();
    const deadline = await redisMicros(300_000);
    const first = [deadline, ARG, known, ...id()];
    expect((await one(key, first))[0]).toBe(1);
    // 200,000 decisions kept, on keys of their own, fill the memory.
    const pipeline = client.pipeline();
    const policy = policyArg(resolvePolicy({ period: '1h', threshold: 1 }, 'fill'), 1);
    for (let i = 0; i < 200_000; i++) {
      pipeline.fcall(
        DECISION_LIBRARY.oneFn,
        1,
        `memory:{fill}:${i}`,
        deadline,
        policy,
        known,
        'fill',
        String(i),
      );
    }
    const replies = (await pipeline.exec())!;
    expect(replies.filter(([, reply]) => (reply as number[])[0] === 1)).toHaveLength(200_000);
    expect(await epoch()).not.toBe(known);
    expect((await one(key, first))[0]).toBe(-3);
    expect(await count(key)).toBe(1);
  }, 300_000);

  it('through the store: a first sending under an ended epoch goes again with an id key, decided once', async () => {
    const store = new RedisStore({ client: redis().shared, answerWithinMs: 2000 });
    await store.warmUp();
    const [key] = keys(1);
    const consume = () => store.consume([key], [POLICY], [1]);
    expect((await consume()).allowed).toBe(true);
    // No reconnection: nothing but this store could have sent the next decision, so it never ran
    // under the old memory, and is decided, once.
    await client.call('FUNCTION', 'LOAD', 'REPLACE', DECISION_LIBRARY.code);
    await client.config('RESETSTAT');
    const decision = await consume();
    expect(decision.allowed).toBe(true);
    expect(decision.degraded).toBeUndefined();
    expect(await count(key)).toBe(2);
    const stats = String(await client.info('commandstats'));
    // Sent under the ended epoch (refused), then again as a script with an id key.
    expect(/cmdstat_fcall:calls=(\d+)/.exec(stats)?.[1]).toBe('2');
    // The store asks for the new epoch meanwhile, sending with an id key until it knows it.
    for (let i = 0; i < 3; i++) expect((await consume()).allowed).toBe(true);
    expect(await count(key)).toBe(5);
    await store.close();
  });

  it('through the store: a first batch under an ended epoch goes again with its id key, each decided once', async () => {
    const store = new RedisStore({ client: redis().shared, answerWithinMs: 2000 });
    await store.warmUp();
    const many = keys(6);
    expect((await store.consume([many[0]], [POLICY], [1])).allowed).toBe(true);
    await client.call('FUNCTION', 'LOAD', 'REPLACE', DECISION_LIBRARY.code);
    // The first goes alone; the five made while it is out go as one batch.
    const decisions = await Promise.all(many.map((key) => store.consume([key], [POLICY], [1])));
    expect(decisions.map((d) => [d.allowed, d.degraded])).toEqual(
      many.map(() => [true, undefined]),
    );
    expect(await Promise.all(many.map(count))).toEqual([2, 1, 1, 1, 1, 1]);
    await store.close();
  });
});

describe('a user who may not ask for the epoch', () => {
  const redis = useRedis('redis');

  it('leaves the epoch to one who may read TIME, when it may not', async () => {
    const admin = redis().shared;
    await admin.call('FUNCTION', 'LOAD', 'REPLACE', DECISION_LIBRARY.code);
    await asUserWithout(admin, ['-time'], async (user) => {
      const client = await redis().connect('ioredis', { user });
      // The first to ask may not read TIME: it is told 0, and the memory has no epoch yet.
      expect(await (client as Redis).call('FCALL_RO', DECISION_LIBRARY.epochFn, '0')).toBe(0);
      expect(Number(await admin.call('FCALL_RO', DECISION_LIBRARY.epochFn, '0'))).toBeGreaterThan(
        0,
      );
    });
  });

  it('decides with id keys, and asks no more than once meanwhile', async () => {
    const admin = redis().shared;
    await asUserWithout(admin, ['-fcall_ro'], async (user) => {
      const store = new RedisStore({
        client: await redis().connect('ioredis', { user }),
        answerWithinMs: 2000,
      });
      await admin.config('RESETSTAT');
      await store.warmUp();
      const tag = `no-epoch:{${randomUUID()}}`;
      const key = `${tag}:0:fw:5-per-30d`;
      for (let i = 0; i < 5; i++) {
        expect((await store.consume([key], [POLICY], [1])).allowed).toBe(true);
      }
      // Each decision left its id key behind.
      expect((await admin.keys(`${tag}:id:*`)).length).toBe(5);
      const stats = String(await admin.info('commandstats'));
      expect(/cmdstat_fcall_ro:calls=0,.*rejected_calls=(\d+)/.exec(stats)?.[1]).toBe('1');
      await store.close();
    });
  });
});

describe.each(CLIENT_KINDS)('the usual decision through %s', (kind) => {
  const redis = useRedis('redis');

  it('writes nothing but its state, alone or in a batch', async () => {
    const store = new RedisStore({ client: await redis().connect(kind), answerWithinMs: 2000 });
    await store.warmUp();
    const tag = `usual:{${randomUUID()}}`;
    const key = `${tag}:0:fw:5-per-30d`;
    const consume = () => store.consume([key], [POLICY], [1]);
    expect((await consume()).allowed).toBe(true);
    // Eight at once: one goes alone, the rest wait for it and go as a batch.
    const answers = await Promise.all(Array.from({ length: 8 }, consume));
    expect(answers.map((a) => a.allowed)).toEqual([
      true,
      true,
      true,
      true,
      false,
      false,
      false,
      false,
    ]);
    expect(await redis().shared.keys(`${tag}*`)).toEqual([key]);
    await store.close();
  });
});

/**
 * The batch function itself (batch.lua), sent by hand as a function and as a script: each of its
 * decisions answers what it would answer alone, in order, including a decision that comes too
 * late, one that fails, and one on a server that refuses TIME.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { resolvePolicy } from '../../../lib/policy/rate-limit.policy.js';
import { policyArg } from '../../../lib/stores/redis/decisions/policy-args.js';
import { BATCH_SCRIPT, DECISION_LIBRARY } from '../../../lib/stores/redis/decisions/scripts.js';
import { useRedis } from '../../support/stores.js';
import { type AclUser, createUserWithout } from '../../support/acl-users.js';

const POLICY = resolvePolicy({ algorithm: 'fixed-window', period: '30d', threshold: 3 }, 'bf');
const ARG = policyArg(POLICY, 1);

/** One decision of a batch: its keys and its arguments, as decide.lua takes them. */
type Member = [keys: string[], args: string[]];

type Send = (client: Redis, members: Member[], id?: string) => Promise<unknown[]>;

/** The call of a batch of `members`, with `id` as the batch's id key when given. */
const batchCall = (members: Member[], id?: string): [string[], string[]] => {
  const keys = [...(id === undefined ? [] : [id]), ...members.flatMap(([k]) => k)];
  const args = [`${members.length}${id === undefined ? '' : 'i'}`];
  for (const [k, a] of members) args.push(String(k.length), String(a.length), ...a);
  return [keys, args];
};

const MODES: [string, Send][] = [
  [
    'a function',
    (client, members, id) => {
      const [keys, args] = batchCall(members, id);
      return client.fcall(DECISION_LIBRARY.batchFn, keys.length, ...keys, ...args) as Promise<
        unknown[]
      >;
    },
  ],
  [
    'a script',
    (client, members, id) => {
      const [keys, args] = batchCall(members, id);
      return client.eval(BATCH_SCRIPT.lua, keys.length, ...keys, ...args) as Promise<unknown[]>;
    },
  ],
];

describe.each(MODES)('the batch function, as %s', (_mode, send) => {
  const redis = useRedis('redis');
  let client: Redis;

  beforeAll(async () => {
    client = redis().shared;
    await client.call('FUNCTION', 'LOAD', 'REPLACE', DECISION_LIBRARY.code);
  });

  const redisMicros = async (ms: number) => {
    const [s, us] = await client.time();
    return String(Number(s) * 1_000_000 + Number(us) + ms * 1000);
  };
  const key = () => `bf:{${randomUUID()}}:0`;

  it('answers each decision in order, as it would answer alone', async () => {
    const [a, b] = [key(), key()];
    const soon = await redisMicros(10_000);
    const reply = await send(client, [
      [[a], ['c', soon, ARG]],
      [[a], ['c', '', ARG]],
      [[b], ['p', '', ARG]],
      [[a], ['c', soon, ARG]],
      [[a], ['c', soon, ARG]],
    ]);
    // Each: its length, then allowed, the policy's allowed, remaining, retry, reset, now.
    const answers = [];
    for (let at = 0; at < reply.length; at += 1 + Number(reply[at])) {
      answers.push(reply.slice(at + 1, at + 1 + Number(reply[at])).slice(0, 3));
    }
    expect(answers).toEqual([
      [1, 1, 2],
      [1, 1, 1],
      [1, 1, 2],
      [1, 1, 0],
      [0, 0, 0],
    ]);
  });

  it('a decision that comes too late does nothing, and the next is decided', async () => {
    const k = key();
    const past = await redisMicros(-1);
    const reply = await send(client, [
      [[k], ['c', past, ARG]],
      [[k], ['c', '', ARG]],
    ]);
    expect(reply.slice(0, 2)).toEqual([2, -1]);
    // The next one finds the whole quota: allowed, 2 left.
    expect(reply.slice(3, 7)).toEqual([6, 1, 1, 2]);
  });

  it('a decision that fails fails alone, and leaves the others decided', async () => {
    const [broken, k] = [key(), key()];
    await client.hset(broken, 'not', 'a counter');
    const reply = await send(client, [
      [[k], ['c', '', ARG]],
      [[broken], ['c', '', ARG]],
      [[k], ['c', '', ARG]],
    ]);
    expect(reply[0]).toBe(6);
    expect(reply[7]).toBe(-1);
    expect(String(reply[8])).toMatch(/WRONGTYPE/);
    // Counted after the first: 1 left.
    expect(reply.slice(9, 13)).toEqual([6, 1, 1, 1]);
  });

  it('a copy of a batch that applied something answers as the first, and applies nothing', async () => {
    const [k, id] = [key(), `bf:{${randomUUID()}}:id:x`];
    const [soon, later] = [await redisMicros(2000), await redisMicros(8000)];
    const members: Member[] = [
      [[k], ['c', soon, ARG]],
      [[k], ['c', later, ARG]],
      [[k], ['p', '', ARG]],
    ];
    const first = await send(client, members, id);
    const copy = await send(client, members, id);
    expect(copy).toEqual(first);
    // Counted once: the peek after them saw 1 left, and so does a third decision.
    expect(first.slice(14, 18)).toEqual([6, 1, 1, 0]);
    const [third] = [await send(client, [[[k], ['c', '', ARG]]])];
    expect(third.slice(0, 4)).toEqual([6, 1, 1, 0]);
    // Kept until the latest deadline, plus the margin a copy may need to get there.
    const kept = await client.pttl(id);
    expect(kept).toBeGreaterThan(8000);
    expect(kept).toBeLessThanOrEqual(8500);
  });

  it('a batch that applied nothing keeps nothing, and a later copy decides afresh', async () => {
    const [k, id] = [key(), `bf:{${randomUUID()}}:id:y`];
    const full = resolvePolicy({ algorithm: 'fixed-window', period: '30d', threshold: 1 }, 'bf');
    const one = policyArg(full, 1);
    await send(client, [[[k], ['c', '', one]]]);
    const members: Member[] = [
      [[k], ['c', '', one]],
      [[k], ['p', '', one]],
    ];
    const rejected = await send(client, members, id);
    expect([rejected[1], rejected[8]]).toEqual([0, 0]);
    expect(await client.exists(id)).toBe(0);
  });

  it('an empty batch answers nothing', async () => {
    expect(await send(client, [])).toEqual([]);
  });

  describe('on a server that refuses TIME in scripts', () => {
    let user: AclUser;
    let refused: Redis;

    beforeAll(async () => {
      user = await createUserWithout(client, ['-time']);
      refused = new Redis({ port: redis().port, username: user.name, password: user.password });
    });
    afterAll(async () => {
      refused.disconnect();
      await client.call('ACL', 'DELUSER', user.name);
    });

    it('a decision on Redis time answers -2 and does nothing; one carrying its clock is decided', async () => {
      const k = key();
      const [s] = await client.time();
      const reply = await send(refused, [
        [[k], ['c', '', ARG]],
        [[k], ['c', `c${Number(s) * 1_000_000}:`, ARG]],
      ]);
      expect(reply.slice(0, 2)).toEqual([1, -2]);
      // The whole quota was there: the first did nothing.
      expect(reply.slice(2, 6)).toEqual([6, 1, 1, 2]);
    });
  });
});

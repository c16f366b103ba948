/**
 * A decision that applies something carries an id key: a copy of it (resent by a client after a
 * reconnect, or sent again by the store after a lost reply) answers what the first one decided
 * and applies nothing. Checked on the script itself, as a function (FCALL) and as a script
 * (EVAL), with the copies sent by hand.
 */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { type Redis } from 'ioredis';
import { resolvePolicy } from '../../../lib/policy/rate-limit.policy.js';
import { policyArg } from '../../../lib/stores/redis/decisions/policy-args.js';
import { DECISION_LIBRARY, DECISION_SCRIPTS } from '../../../lib/stores/redis/decisions/scripts.js';
import { useRedis } from '../../support/stores.js';
import { unitsIn } from '../../support/weighted-sets.js';

const POLICY = resolvePolicy({ period: '1h', threshold: 2 }, 'ids');
const ARG = policyArg(POLICY, 1);

type Send = (client: Redis, keys: string[], args: string[]) => Promise<unknown>;

const MODES: [string, Send][] = [
  [
    'a function',
    (client, keys, args) => client.fcall(DECISION_LIBRARY.fn, keys.length, ...keys, ...args),
  ],
  [
    'a script',
    (client, keys, args) => client.eval(DECISION_SCRIPTS.mixed.lua, keys.length, ...keys, ...args),
  ],
];

describe.each(MODES)('decision ids, as %s', (_mode, send) => {
  const redis = useRedis('redis');
  let client: Redis;

  beforeAll(async () => {
    client = redis().shared;
    await client.call('FUNCTION', 'LOAD', 'REPLACE', DECISION_LIBRARY.code);
  });

  /** Redis's clock, in µs, `ms` from now. */
  const redisMicros = async (ms = 0) => {
    const [s, us] = await client.time();
    return String(Number(s) * 1_000_000 + Number(us) + ms * 1000);
  };
  const fresh = () => {
    const tag = `ids:{${randomUUID()}}`;
    return { key: `${tag}:0:sw`, id: `${tag}:id:${randomUUID().slice(0, 8)}` };
  };

  it('a copy answers what the first one decided, and applies nothing', async () => {
    const { key, id } = fresh();
    const deadline = await redisMicros(10_000);
    const first = await send(client, [key, id], ['c', deadline, ARG]);
    const copy = await send(client, [key, id], ['c', deadline, ARG]);
    expect(copy).toEqual(first);
    expect((first as number[])[0]).toBe(1);
    expect(await client.zcard(key)).toBe(1);
    // Another decision, with another id, is counted.
    await send(client, [key, `${id}x`], ['c', deadline, ARG]);
    expect(await client.zcard(key)).toBe(2);
  });

  it('a refund sent twice with one id gives back once', async () => {
    const { key, id } = fresh();
    for (let i = 0; i < 2; i++) await send(client, [key, `${id}${i}`], ['c', '', ARG]);
    expect(await client.zcard(key)).toBe(2);
    const first = await send(client, [key, id], ['r', '', ARG]);
    expect(await send(client, [key, id], ['r', '', ARG])).toEqual(first);
    expect(await client.zcard(key)).toBe(1);
  });

  it('a settlement sent twice with one id charges once, and gives back once', async () => {
    const { key, id } = fresh();
    const reserved = (await send(client, [key, `${id}r`], ['c', '', ARG])) as number[];
    // The reservation's arrival: the reply's time, after its one policy's four answers.
    const settle = (delta: number) => [`s${reserved[5]}`, '', policyArg(POLICY, delta)];
    const charged = await send(client, [key, `${id}c`], settle(3));
    expect(await send(client, [key, `${id}c`], settle(3))).toEqual(charged);
    expect(await unitsIn(client, key)).toBe(4);
    const given = await send(client, [key, `${id}g`], settle(-2));
    expect(await send(client, [key, `${id}g`], settle(-2))).toEqual(given);
    expect(await unitsIn(client, key)).toBe(2);
    // Over the threshold of 2 after the charge, at it after the give-back.
    expect([(charged as number[])[0], (given as number[])[0]]).toEqual([0, 1]);
  });

  it('a copy after its deadline answers what the first one decided, while the id is kept', async () => {
    // A reply lost, and its copy reaching Redis only after the deadline: the first one applied, so
    // refusing the copy as late would leave the fallback to answer a request Redis counted.
    const { key, id } = fresh();
    const first = await send(client, [key, id], ['c', await redisMicros(10_000), ARG]);
    expect(await client.exists(id)).toBe(1);
    const copy = await send(client, [key, id], ['c', await redisMicros(-1), ARG]);
    expect(copy).toEqual(first);
    expect((first as number[])[0]).toBe(1);
    expect(await client.zcard(key)).toBe(1);
  });

  it('a decision after its deadline, whose id Redis does not hold, records nothing and answers -1', async () => {
    const { key, id } = fresh();
    const late = (await send(client, [key, id], ['c', await redisMicros(-1), ARG])) as number[];
    expect(late).toHaveLength(2);
    expect(late[0]).toBe(-1);
    expect(await client.exists(key, id)).toBe(0);
  });

  it('keeps an id until the deadline plus 500 ms, or 5 s without one', async () => {
    const { key, id } = fresh();
    await send(client, [key, id], ['c', await redisMicros(2000), ARG]);
    const ttl = await client.pttl(id);
    expect(ttl).toBeGreaterThan(2300);
    expect(ttl).toBeLessThanOrEqual(2500);
    await send(client, [key, `${id}x`], ['c', '', ARG]);
    expect(await client.pttl(`${id}x`)).toBeGreaterThan(4800);
    expect(await client.pttl(`${id}x`)).toBeLessThanOrEqual(5000);
  });

  it('a rejected consume keeps no id, and a peek or a decision without an id writes none', async () => {
    const { key, id } = fresh();
    for (let i = 0; i < 2; i++) await send(client, [key, `${id}${i}`], ['c', '', ARG]);
    const rejected = (await send(client, [key, id], ['c', '', ARG])) as number[];
    expect(rejected[0]).toBe(0);
    expect(await client.exists(id)).toBe(0);
    await send(client, [key], ['p', '', ARG]);
    await send(client, [key], ['c', '', ARG]);
    const tag = key.slice(0, key.indexOf('}') + 1);
    expect((await client.keys(`${tag}*`)).sort()).toEqual([`${id}0`, `${id}1`, key].sort());
  });
});

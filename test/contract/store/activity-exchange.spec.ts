/**
 * Where instances share the console's activity in Redis, through every client library: each
 * instance's report of a minute replaces its last one, every instance's are read back, each
 * minute's hash lives 17 minutes from its last write, and a value this version cannot read is
 * skipped.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { RedisStore } from '../../../lib/index.js';
import { RedisActivityExchange } from '../../../lib/activity/redis-activity-exchange.js';
import { ALL_CLIENT_KINDS, type ClientKind } from '../../support/clients.js';
import { useRedis } from '../../support/stores.js';
import { reportOf } from '../../support/activity-reports.js';

describe.each(ALL_CLIENT_KINDS)('the Redis activity exchange through %s', (kind: ClientKind) => {
  const redis = useRedis('redis');

  async function exchange(prefix: string) {
    const store = new RedisStore({ client: await redis().connect(kind) });
    return RedisActivityExchange.forStore(store, prefix);
  }

  it('keeps the last report of each instance per minute, and reads every instance’s', async () => {
    const prefix = `act-${randomUUID()}`;
    const [a, b] = [await exchange(prefix), await exchange(prefix)];
    await a.share(reportOf('a', 100, 1));
    await a.share(reportOf('a', 100, 4));
    await b.share(reportOf('b', 100, 2));
    await b.share(reportOf('b', 101, 3));
    const read = await a.read([101, 100, 99]);
    const seen = read.map((r) => [r.instance, r.minute, r.top.entries[0].count]);
    expect(seen.sort()).toEqual([
      ['a', 100, 4],
      ['b', 100, 2],
      ['b', 101, 3],
    ]);
    expect(read.find((r) => r.instance === 'b' && r.minute === 101)).toEqual(reportOf('b', 101, 3));
    expect(await b.read([])).toEqual([]);
  });

  it('gives each minute’s hash a TTL of 17 minutes from its last write, under one hash tag', async () => {
    const prefix = `act-${randomUUID()}`;
    const a = await exchange(prefix);
    await a.share(reportOf('a', 7, 1));
    const ttl = await redis().shared.pttl(`${prefix}:{console}:7`);
    expect(ttl).toBeGreaterThan(16 * 60_000);
    expect(ttl).toBeLessThanOrEqual(17 * 60_000);
    expect(await redis().shared.keys(`${prefix}:*`)).toEqual([`${prefix}:{console}:7`]);
  });

  it('skips a value this version cannot read, and keeps the others', async () => {
    const prefix = `act-${randomUUID()}`;
    const a = await exchange(prefix);
    await a.share(reportOf('a', 5, 1));
    await redis().shared.hset(`${prefix}:{console}:5`, 'old', '{"version":0}', 'bad', 'not json');
    expect((await a.read([5])).map((r) => r.instance)).toEqual(['a']);
  });
});

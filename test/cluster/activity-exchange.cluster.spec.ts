/**
 * The console's activity on a 3-master cluster: every minute's hash under the one `{console}` hash
 * tag, so that a read of 16 minutes is one script call on one master, through every client.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { RedisStore } from '../../lib/index.js';
import { RedisActivityExchange } from '../../lib/activity/redis-activity-exchange.js';
import { ALL_CLIENT_KINDS } from '../support/clients.js';
import { useCluster } from '../support/stores.js';
import { reportOf } from '../support/activity-reports.js';

const cluster = useCluster();

describe.each(ALL_CLIENT_KINDS)('the Redis activity exchange on a cluster through %s', (kind) => {
  it('shares and reads every instance’s minutes in one slot', async () => {
    const prefix = `act-${randomUUID()}`;
    const exchange = async () =>
      RedisActivityExchange.forStore(
        new RedisStore({ client: await cluster().connect(kind) }),
        prefix,
      );
    const [a, b] = [await exchange(), await exchange()];
    for (let minute = 0; minute < 16; minute++) await a.share(reportOf('a', minute, minute + 1));
    await b.share(reportOf('b', 15, 100));
    const read = await b.read(Array.from({ length: 16 }, (_, i) => 15 - i));
    expect(read).toHaveLength(17);
    expect(
      read
        .filter((r) => r.minute === 15)
        .map((r) => r.instance)
        .sort(),
    ).toEqual(['a', 'b']);
    expect(await cluster().client().pttl(`${prefix}:{console}:0`)).toBeGreaterThan(16 * 60_000);
  });
});

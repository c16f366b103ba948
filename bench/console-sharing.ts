/**
 * What the console's sharing costs Redis: the size of one instance's report of a minute, and
 * what a page's poll reads (the 16 minutes of three instances), measured on a feed of 20 routes
 * of two policies that turned away 10,000 trackers, so that every summary is full.
 */
import { Redis } from 'ioredis';
import { type ActivityReport } from '../lib/activity/activity-exchange.js';
import { DecisionFeed } from '../lib/activity/decision-feed.js';
import { packReport } from '../lib/activity/packed-report.js';
import { RedisActivityExchange } from '../lib/activity/redis-activity-exchange.js';
import { ActivitySharing } from '../lib/console/activity-sharing.js';
import { RedisStore } from '../lib/index.js';
import { encodeKeyPart, RouteKeys } from '../lib/keys/route-keys.js';
import { resolvePolicy } from '../lib/policy/rate-limit.policy.js';
import { type BenchContext } from './support/bench-context.js';
import { fixed, integer, table } from './support/markdown.js';

const ROUTES = 20;
const TRACKERS = 10_000;
const MINUTES = 16;
const INSTANCES = 3;
const MINUTE_MS = 60_000;

/** One instance's reports: the minute in progress (with its routes) and one that has ended. */
function reports(instance: string, minute: number) {
  const keys = new RouteKeys('bench-console');
  const policies = [
    resolvePolicy({ name: 'per-second', period: '1s', threshold: 10 }, 'bench'),
    resolvePolicy({ name: 'per-hour', period: '1h', threshold: 1000 }, 'bench'),
  ];
  let now = minute * MINUTE_MS;
  const feed = new DecisionFeed(() => now);
  for (let n = 0; n < 2 * TRACKERS; n++) {
    const route = `GET /api/v1/resource-${n % ROUTES}/:id`;
    const part = encodeKeyPart(`user:${(n * 7919) % TRACKERS}`);
    const limits = {
      keys: policies.map((p, i) => keys.routeHead(route) + part + RouteKeys.tail(p, i)),
      policies,
      costs: [1, 1],
    };
    const decision = { allowed: false, policies: policies.map(() => ({ allowed: false })) };
    feed.decided(route, limits, decision as never, decision as never);
    now += 1;
  }
  const sharing = new ActivitySharing(feed, {
    shared: true,
    share: async () => {},
    read: async () => [],
  });
  const current = (sharing as unknown as { report(m: number, now: number): ActivityReport }).report(
    minute,
    now,
  );
  const ended: ActivityReport = { ...current };
  delete (ended as { routes?: unknown }).routes;
  return { current, ended, instance };
}

export async function measureSharing(ctx: BenchContext): Promise<string> {
  const minute = Math.floor(Date.now() / MINUTE_MS);
  const { current, ended } = reports('a', minute);
  const client = new Redis(ctx.redisUrl);
  await client.ping();
  try {
    const exchange = RedisActivityExchange.forStore(new RedisStore({ client }), 'bench-console');
    for (const instance of Array.from({ length: INSTANCES }, (_, i) => `instance-${i}`)) {
      for (let m = 0; m < MINUTES; m++) {
        const report = m === 0 ? current : ended;
        await exchange.share({ ...report, instance, minute: minute - m });
      }
    }
    const wanted = Array.from({ length: MINUTES }, (_, m) => minute - m);
    const reads = ctx.quick ? 5 : 50;
    await exchange.read(wanted);
    await ctx.admin.config('RESETSTAT');
    const started = performance.now();
    for (let i = 0; i < reads; i++) await exchange.read(wanted);
    const clientMs = (performance.now() - started) / reads;
    const stats = await ctx.admin.info('commandstats');
    const usec = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(stats);
    const redisUs = usec === null ? NaN : Number(usec[2]) / Number(usec[1]);
    const size = (r: ActivityReport) => packReport(r).length;
    const readBytes = INSTANCES * (size(current) + (MINUTES - 1) * size(ended));
    return [
      '### What sharing stores and a page reads',
      '',
      `Each instance's report of a minute, its summary full (128 trackers of ${integer(TRACKERS)} turned away on ${ROUTES} routes of two policies), as stored in Redis; and a page's poll, which reads the ${MINUTES} minutes of ${INSTANCES} instances once (the script's time from \`INFO commandstats\`, the round trip through ioredis), ${reads} reads.`,
      '',
      table(
        ['what', 'bytes', 'Redis µs', 'ms a read'],
        [
          ['a report of the minute in progress (with its routes)', integer(size(current)), '', ''],
          ['a report of a minute that has ended', integer(size(ended)), '', ''],
          [
            `a page's poll: ${MINUTES} minutes × ${INSTANCES} instances`,
            integer(readBytes),
            fixed(redisUs, 0),
            fixed(clientMs, 2),
          ],
        ],
      ),
    ].join('\n');
  } finally {
    client.disconnect();
  }
}

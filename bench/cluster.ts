/**
 * Throughput on a 3-master Redis Cluster: ours, in the default key layout and with slot groups,
 * against rate-limiter-flexible on the same cluster clients. Redis CPU is summed over the masters.
 */
import { Cluster, type Redis } from 'ioredis';
import { createCluster } from 'redis';
import { type Algorithm } from '../lib/index.js';
import { type RedisClient } from '../lib/stores/redis/clients/redis-client.js';
import { startCluster, type TestCluster } from '../test/support/redis-cluster.js';
import { type BenchContext, progress } from './support/bench-context.js';
import { median, runClosedLoop } from './support/closed-loop.js';
import { LIMIT } from './support/decisions-contenders.js';
import { type Library, type Limiter } from './support/limiter.js';
import { fixed, integer, ratio, table } from './support/markdown.js';
import { ourLimiter } from './support/our-limiter.js';
import { flexibleRow, flexiblePoints } from './support/peer-limiters.js';
import { counterDelta, type ServerCounters, serverCounters } from './support/redis-stats.js';
import { RateLimiterRedis } from 'rate-limiter-flexible';

const KEYS = 10_000;
const IN_FLIGHT = 256;
const ROUNDS = 3;
/** Slot groups of the grouped rows: 4 per master. */
export const CLUSTER_SLOT_GROUPS = 12;
/** More groups for one row, to show what finer groups cost in batching: 16 per master. */
const FINE_SLOT_GROUPS = 48;

export type ClusterLibrary = Extract<Library, 'ioredis' | 'node-redis'>;
export type ClusterId =
  `${'flexible' | `ours:${Algorithm}` | `ours:${Algorithm}:g${number}`}@${ClusterLibrary}`;

interface ClusterContender {
  readonly id: ClusterId;
  readonly label: string;
  readonly library: ClusterLibrary;
  readonly start: (client: RedisClient) => Promise<Limiter>;
}

const policyOf = (algorithm: Algorithm) => ({
  algorithm,
  period: LIMIT.periodMs / 1000,
  threshold: LIMIT.threshold,
});

function contendersOn(library: ClusterLibrary): ClusterContender[] {
  const ours = (algorithm: Algorithm, groups?: number): ClusterContender => ({
    id:
      groups === undefined
        ? (`ours:${algorithm}@${library}` as const)
        : (`ours:${algorithm}:g${groups}@${library}` as const),
    label: `ours ${algorithm}${groups === undefined ? '' : `, slotGroups: ${groups}`}`,
    library,
    start: (client) =>
      ourLimiter('', {
        client,
        prefix: `cl-${algorithm}${groups === undefined ? '' : `-g${groups}`}`,
        policy: policyOf(algorithm),
        slotGroups: groups,
      }),
  });
  return [
    {
      id: `flexible@${library}`,
      label: 'rate-limiter-flexible RateLimiterRedis',
      library,
      start: async (client) => {
        const limiter = new RateLimiterRedis({
          storeClient: client,
          keyPrefix: 'cl-rlflx',
          ...flexiblePoints(LIMIT),
          ...(library === 'node-redis' ? { useRedisPackage: true } : {}),
        });
        return flexibleRow(limiter, client, 'cl-rlflx', () => closeCluster(client));
      },
    },
    ours('fixed-window'),
    ours('fixed-window', CLUSTER_SLOT_GROUPS),
    ours('sliding-window'),
    ours('sliding-window', CLUSTER_SLOT_GROUPS),
    ...(library === 'ioredis'
      ? [
          ours('fixed-window', FINE_SLOT_GROUPS),
          ours('leaky-bucket', CLUSTER_SLOT_GROUPS),
          ours('token-bucket', CLUSTER_SLOT_GROUPS),
        ]
      : []),
  ];
}

const CONTENDERS: readonly ClusterContender[] = [
  ...contendersOn('ioredis'),
  ...contendersOn('node-redis'),
];

/** A client of `library` to the cluster, with the library's defaults, connected. */
async function connect(cluster: TestCluster, library: ClusterLibrary): Promise<RedisClient> {
  const [first] = cluster.startupNodes;
  if (library === 'ioredis') {
    const client = new Cluster([first]);
    await client.ping();
    return client;
  }
  const client = createCluster({ rootNodes: [{ url: `redis://${first.host}:${first.port}` }] });
  client.on('error', (error: unknown) => process.stderr.write(`node-redis: ${String(error)}\n`));
  await client.connect();
  return client as unknown as RedisClient;
}

async function closeCluster(client: unknown): Promise<void> {
  if (client instanceof Cluster) await client.quit().catch(() => client.disconnect());
  else await (client as { close(): Promise<void> }).close();
}

/** The masters' counters, summed. */
async function clusterCounters(admins: readonly Redis[]): Promise<ServerCounters> {
  const each = await Promise.all(admins.map((admin) => serverCounters(admin)));
  return each.reduce((sum, c) => ({
    commands: sum.commands + c.commands,
    scripts: sum.scripts + c.scripts,
    scriptMicros: sum.scriptMicros + c.scriptMicros,
    cpuMicros: sum.cpuMicros + c.cpuMicros,
  }));
}

interface Run {
  readonly perSecond: number;
  readonly decisions: number;
  readonly server: ServerCounters;
  readonly degraded: number;
  readonly rejected: number;
}

export interface ClusterResult {
  readonly markdown: string;
  /** Decisions/s of `a` over rate-limiter-flexible's on the same library: median of the rounds. */
  readonly ratio: (a: ClusterId) => number;
  /** Redis CPU per decision of `a` over rate-limiter-flexible's, paired as `ratio` is. */
  readonly cpuRatio: (a: ClusterId) => number;
  /** Decisions the fallback answered, over every round. */
  readonly degraded: (a: ClusterId) => number;
}

export async function runCluster(ctx: BenchContext): Promise<ClusterResult> {
  const total = ctx.quick ? 10_000 : 100_000;
  const warmup = ctx.quick ? 200 : 2000;
  const rounds = ctx.quick ? 1 : ROUNDS;
  const keys = Array.from({ length: KEYS }, (_, k) => `user:${k}`);
  const cluster = await startCluster({ replicas: 0, own: true });
  const runs = new Map<ClusterId, Run[]>(CONTENDERS.map((c) => [c.id, []]));
  try {
    const admins = (await cluster.masters()).map((m) => cluster.admin(m));
    for (let round = 0; round < rounds; round++) {
      await Promise.all(admins.map((admin) => admin.flushall()));
      for (let k = 0; k < CONTENDERS.length; k++) {
        const c = CONTENDERS[(k + round) % CONTENDERS.length];
        const limiter = await c.start(await connect(cluster, c.library));
        try {
          const decide = (i: number) => limiter.decide(keys[i % KEYS]);
          const warm = await runClosedLoop(warmup, IN_FLIGHT, decide);
          const before = await clusterCounters(admins);
          const degradedBefore = limiter.degraded();
          const loop = await runClosedLoop(total, IN_FLIGHT, decide);
          const server = counterDelta(before, await clusterCounters(admins));
          runs.get(c.id)!.push({
            perSecond: loop.perSecond,
            decisions: loop.decisions,
            server,
            degraded: limiter.degraded() - degradedBefore,
            rejected: warm.rejected + loop.rejected,
          });
          progress(
            'cluster',
            `round ${round + 1}/${rounds}  ${c.label} (${c.library}): ${integer(loop.perSecond)}/s`,
          );
        } finally {
          await limiter.close();
        }
      }
    }
  } finally {
    await cluster.stop();
  }
  const flexibleOf = (id: ClusterId): ClusterId => `flexible@${id.split('@')[1] as ClusterLibrary}`;
  const paired = (value: (run: Run) => number) => (id: ClusterId) => {
    const own = runs.get(id)!;
    const theirs = runs.get(flexibleOf(id))!;
    return median(own.map((run, k) => value(run) / value(theirs[k])));
  };
  const cpuPer = (run: Run) => run.server.cpuMicros / run.decisions;
  const ratioOf = paired((run) => run.perSecond);
  const cpuRatio = paired(cpuPer);
  const degraded = (id: ClusterId) => runs.get(id)!.reduce((n, run) => n + run.degraded, 0);
  const rows = CONTENDERS.map((c) => {
    const own = runs.get(c.id)!;
    const rejected = own.reduce((n, run) => n + run.rejected, 0);
    return [
      c.label,
      c.library,
      integer(median(own.map((run) => run.perSecond))),
      own.map((run) => integer(run.perSecond)).join(' / '),
      c.id.startsWith('flexible') ? '–' : ratio(ratioOf(c.id)),
      fixed(median(own.map(cpuPer))),
      c.id.startsWith('flexible') ? '–' : ratio(cpuRatio(c.id)),
      fixed(median(own.map((run) => run.server.scripts / run.decisions)), 2),
      `${integer(rejected)} / ${integer(degraded(c.id))}`,
    ];
  });
  const markdown = [
    '## Decisions on a 3-master Redis Cluster',
    '',
    `${integer(total)} decisions over ${integer(KEYS)} keys, ${IN_FLIGHT} in flight (closed loop), ` +
      `limit ${integer(LIMIT.threshold)} per ${LIMIT.periodMs / 1000} s, on three private ` +
      'redis-server masters (no replicas) joined by `redis-cli --cluster create`, on this machine. ' +
      `${rounds} round${rounds === 1 ? '' : 's'}, every row once per round in rotated order after ` +
      `${integer(warmup)} warm-up decisions, FLUSHALL on every master between rounds. Each row has ` +
      'its own cluster client (ioredis `Cluster`, node-redis `createCluster`, default options). ' +
      '"vs rlf" divides by rate-limiter-flexible on the same library within each round and shows ' +
      'the median; "Redis CPU µs" is the CPU of the three masters per decision (INFO cpu, summed); ' +
      '"calls" the script and function calls per decision. In the default layout each key is its ' +
      'own slot, so a batch rarely finds company; with `slotGroups` the keys fall into that many ' +
      'slots and decisions on different keys go to their master together.',
    '',
    table(
      [
        'contender',
        'client',
        'decisions/s',
        'rounds',
        'vs rlf',
        'Redis CPU µs',
        'CPU vs rlf',
        'calls',
        'rejected / degraded',
      ],
      rows,
    ),
  ].join('\n');
  return { markdown, ratio: ratioOf, cpuRatio, degraded };
}

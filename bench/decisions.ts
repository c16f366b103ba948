/**
 * Throughput: how many decisions per second each limiter gets through one Redis, when nothing is
 * rejected, so every decision does the full read-and-write work of its algorithm.
 */
import { type Algorithm } from '../lib/index.js';
import { type BenchContext, progress } from './support/bench-context.js';
import { medianByThroughput, runClosedLoop } from './support/closed-loop.js';
import { floorLimiter } from './support/floor-limiter.js';
import { type Limit, type Limiter } from './support/limiter.js';
import { fixed, integer, ms, ratio, table } from './support/markdown.js';
import { type MeasuredRun, measuredRun } from './support/measured-run.js';
import { ourLimiter } from './support/our-limiter.js';
import { flexibleLimiter, nestLabLimiter } from './support/peer-limiters.js';
import { ALGORITHMS } from '../lib/algorithms/algorithm.js';

const KEYS = 10_000;
const IN_FLIGHT = 256;
const ROUNDS = 3;
// Far above the ~12 decisions a key gets per round, so every contender allows everything.
const LIMIT: Limit = { threshold: 1000, periodMs: 60_000 };

export type DecisionsId =
  'floor' | 'flexible' | 'nest-lab' | `ours:${Algorithm}` | 'ours:auto-pipelining';

interface Contender {
  readonly id: DecisionsId;
  readonly label: string;
  readonly start: (url: string) => Promise<Limiter>;
}

const ourPolicy = (algorithm: Algorithm) => ({
  algorithm,
  period: LIMIT.periodMs / 1000,
  threshold: LIMIT.threshold,
});

const CONTENDERS: readonly Contender[] = [
  {
    id: 'floor',
    label: 'floor: minimal 4-call sorted-set script',
    start: (url) => floorLimiter(url, 'floor', LIMIT),
  },
  ...ALGORITHMS.map((algorithm): Contender => ({
    id: `ours:${algorithm}`,
    label: `ours ${algorithm}`,
    start: (url) => ourLimiter(url, { prefix: `ours-${algorithm}`, policy: ourPolicy(algorithm) }),
  })),
  {
    id: 'ours:auto-pipelining',
    label: 'ours sliding-window, client with enableAutoPipelining',
    start: (url) =>
      ourLimiter(url, {
        prefix: 'ours-autopipe',
        policy: ourPolicy('sliding-window'),
        clientOptions: { enableAutoPipelining: true },
      }),
  },
  {
    id: 'flexible',
    label: 'rate-limiter-flexible RateLimiterRedis',
    start: (url) => flexibleLimiter(url, LIMIT, { prefix: 'rlflx' }),
  },
  {
    id: 'nest-lab',
    label: '@nest-lab/throttler-storage-redis',
    start: (url) => nestLabLimiter(url, LIMIT, 'nestlab'),
  },
];

export interface DecisionsResult {
  readonly markdown: string;
  /** Median decisions/s per contender. */
  readonly perSecond: ReadonlyMap<DecisionsId, number>;
}

export async function runDecisions(ctx: BenchContext): Promise<DecisionsResult> {
  const total = ctx.quick ? 10_000 : 100_000;
  const warmup = ctx.quick ? 200 : 2000;
  const keys = Array.from({ length: KEYS }, (_, k) => `user:${k}`);
  const decideWith = (limiter: Limiter) => (i: number) => limiter.decide(keys[i % KEYS]);

  const limiters = new Map<DecisionsId, Limiter>();
  const runs = new Map<DecisionsId, MeasuredRun[]>(CONTENDERS.map((c) => [c.id, []]));
  const rejected = new Map<DecisionsId, number>(CONTENDERS.map((c) => [c.id, 0]));
  try {
    for (const c of CONTENDERS) limiters.set(c.id, await c.start(ctx.redisUrl));
    for (let round = 0; round < ROUNDS; round++) {
      await ctx.admin.flushall();
      // Rotated, so no contender always runs first (cold) or last (after the most garbage).
      const order = CONTENDERS.map((_, k) => CONTENDERS[(k + round) % CONTENDERS.length]);
      for (const c of order) {
        const decide = decideWith(limiters.get(c.id)!);
        const warm = await runClosedLoop(warmup, IN_FLIGHT, decide);
        const run = await measuredRun(ctx.admin, total, IN_FLIGHT, decide);
        runs.get(c.id)!.push(run);
        rejected.set(c.id, rejected.get(c.id)! + warm.rejected + run.rejected);
        progress(
          'decisions',
          `round ${round + 1}/${ROUNDS}  ${c.label}: ${integer(run.perSecond)}/s`,
        );
      }
    }
  } finally {
    for (const limiter of limiters.values()) await limiter.close();
  }

  const perSecond = new Map<DecisionsId, number>();
  for (const c of CONTENDERS) perSecond.set(c.id, medianByThroughput(runs.get(c.id)!).perSecond);
  const floor = perSecond.get('floor')!;
  const flexible = perSecond.get('flexible')!;
  const rows = CONTENDERS.map((c) => {
    const median = medianByThroughput(runs.get(c.id)!);
    const spread = runs
      .get(c.id)!
      .map((r) => integer(r.perSecond))
      .join(' / ');
    const degraded = limiters.get(c.id)?.degraded() ?? 0;
    const per = (micros: number) => fixed(micros / median.decisions);
    return [
      c.label,
      integer(median.perSecond),
      spread,
      ms(median.p50Ms),
      ms(median.p99Ms),
      ratio(median.perSecond / floor),
      ratio(median.perSecond / flexible),
      per(median.nodeCpuMicros),
      per(median.server.cpuMicros),
      per(median.server.scriptMicros),
      integer(rejected.get(c.id)!) + (degraded > 0 ? ` (${integer(degraded)} degraded)` : ''),
    ];
  });
  const bad = CONTENDERS.filter((c) => rejected.get(c.id)! > 0 || limiters.get(c.id)!.degraded());

  const markdown = [
    '## Decisions: throughput on one Redis',
    '',
    `${integer(total)} decisions over ${integer(KEYS)} keys (key = i mod ${integer(KEYS)}), ` +
      `${IN_FLIGHT} in flight (closed loop), limit ${integer(LIMIT.threshold)} per ` +
      `${LIMIT.periodMs / 1000} s for every contender, so nothing may be rejected. ${ROUNDS} ` +
      `rounds, each running every contender once in rotated order after ${integer(warmup)} ` +
      'warm-up decisions, FLUSHALL between rounds. Each contender has its own ioredis client ' +
      '(default options unless the row says otherwise) and its own key prefix. A row shows the ' +
      'median round by decisions/s and that round’s latency percentiles; "rounds" lists all of ' +
      'them, in round order.',
    '',
    table(
      [
        'contender',
        'decisions/s',
        'rounds',
        'p50 ms',
        'p99 ms',
        'vs floor',
        'vs rate-limiter-flexible',
        'Node CPU µs',
        'Redis CPU µs',
        'script µs',
        'rejected',
      ],
      rows,
    ),
    '',
    'Ours is measured through `RateLimitService.consume(key, policy)` on a Nest app built with ' +
      '`RateLimitModule.forRoot({ redis: client, keyPrefix })`: the block cache, the 100 ms ' +
      'deadline and the fallback are all in the path, as in production. The floor is the ' +
      'least a sorted-set log can cost: one EVALSHA of ZREMRANGEBYSCORE, ZCARD, ZADD, PEXPIRE ' +
      'with the time and member from the client. rate-limiter-flexible runs one EVALSHA ' +
      '(SET NX, INCRBY, PTTL); @nest-lab sends its whole script with EVAL on every call. ' +
      'The three µs columns are costs per decision in the median round: CPU of this process ' +
      '(the limiter’s client side plus the load generator, the same for every row), CPU of ' +
      'redis-server (INFO cpu: parsing and I/O included) and time inside its scripts (INFO ' +
      'commandstats). With two cores, one for each, the side nearer to a full core is the ' +
      'bottleneck.',
    ...(bad.length > 0
      ? [
          '',
          `**Warning:** rejected or degraded decisions in: ${bad.map((c) => c.label).join(', ')}.`,
        ]
      : []),
  ].join('\n');
  return { markdown, perSecond };
}

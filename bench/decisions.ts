/**
 * Throughput: how many decisions per second each limiter gets through one Redis, when nothing is
 * rejected, so every decision does the full read-and-write work of its algorithm.
 */
import { type BenchContext, progress } from './support/bench-context.js';
import { median, medianByThroughput, runClosedLoop } from './support/closed-loop.js';
import {
  type Contender,
  CONTENDERS,
  type DecisionsId,
  LIMIT,
  VALKEY_CONTENDERS,
} from './support/decisions-contenders.js';
import {
  compareInline,
  type InlineComparison,
  inlineOnMemory,
  renderInline,
} from './support/inline-policy.js';
import { type Limiter } from './support/limiter.js';
import { fixed, integer, ms, ratio, table } from './support/markdown.js';
import { type MeasuredRun, measuredRun } from './support/measured-run.js';
import { type OverrideRowId, overridesOnMemory, renderOverrides } from './support/override-rows.js';
import { type SideBySide } from './support/side-by-side.js';
import {
  renderTelemetry,
  type TelemetryComparison,
  telemetryOnMemory,
} from './support/telemetry-rows.js';
import { renderValkeyRows } from './support/valkey-rows.js';

export { type DecisionsId } from './support/decisions-contenders.js';

const KEYS = 10_000;
const IN_FLIGHT = 256;
const ROUNDS = 5;

export interface DecisionsResult {
  readonly markdown: string;
  /** Median decisions/s per contender. */
  readonly perSecond: ReadonlyMap<DecisionsId, number>;
  /** `a` over `b`: the median of their ratios within each round both ran clean. */
  readonly ratio: (a: DecisionsId, b: DecisionsId) => number;
  /** Redis CPU per decision of `a` over `b`, paired by round as `ratio` is. */
  readonly redisCpuRatio: (a: DecisionsId, b: DecisionsId) => number;
  /** A policy written inline against the same policy hoisted, on Redis (ioredis) and memory. */
  readonly inline: { readonly redis: InlineComparison; readonly memory: InlineComparison };
  /** A decision with telemetry off, with the API and no SDK, with the SDK, on memory. */
  readonly telemetry: TelemetryComparison;
  /** A decision with no override in force, with one elsewhere, with several kinds on its policy. */
  readonly overrides: SideBySide<OverrideRowId>;
}

const COLUMNS = [
  'contender',
  'client',
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
];

const describe = (c: Contender) =>
  `${c.label} (${c.library}${c.server === 'valkey' ? ' on Valkey' : ''})`;

export async function runDecisions(ctx: BenchContext): Promise<DecisionsResult> {
  const valkey = ctx.valkey;
  const contenders = valkey === undefined ? CONTENDERS : [...CONTENDERS, ...VALKEY_CONTENDERS];
  const serverOf = (c: Contender) =>
    c.server === 'valkey' ? valkey! : { url: ctx.redisUrl, admin: ctx.admin };
  const total = ctx.quick ? 10_000 : 100_000;
  const warmup = ctx.quick ? 200 : 2000;
  const keys = Array.from({ length: KEYS }, (_, k) => `user:${k}`);
  const decideWith = (limiter: Limiter) => (i: number) => limiter.decide(keys[i % KEYS]);

  const limiters = new Map<DecisionsId, Limiter>();
  const runs = new Map<DecisionsId, MeasuredRun[]>(contenders.map((c) => [c.id, []]));
  const rejected = new Map<DecisionsId, number>(contenders.map((c) => [c.id, 0]));
  // Per measured round: decisions the fallback answered, when Redis was late past the timeout.
  const degradedIn = new Map<DecisionsId, number[]>(contenders.map((c) => [c.id, []]));
  try {
    for (const c of contenders) limiters.set(c.id, await c.start(serverOf(c).url));
    for (let round = 0; round < ROUNDS; round++) {
      await Promise.all([ctx.admin.flushall(), valkey?.admin.flushall()]);
      // Rotated, so no contender always runs first (cold) or last (after the most garbage).
      const order = contenders.map((_, k) => contenders[(k + round) % contenders.length]);
      for (const c of order) {
        const limiter = limiters.get(c.id)!;
        const decide = decideWith(limiter);
        const warm = await runClosedLoop(warmup, IN_FLIGHT, decide);
        const degradedBefore = limiter.degraded();
        const run = await measuredRun(serverOf(c).admin, total, IN_FLIGHT, decide);
        runs.get(c.id)!.push(run);
        degradedIn.get(c.id)!.push(limiter.degraded() - degradedBefore);
        rejected.set(c.id, rejected.get(c.id)! + warm.rejected + run.rejected);
        progress(
          'decisions',
          `round ${round + 1}/${ROUNDS}  ${describe(c)}: ${integer(run.perSecond)}/s`,
        );
      }
    }
  } finally {
    for (const limiter of limiters.values()) await limiter.close();
  }
  const memory = await inlineOnMemory(ctx.quick);
  const telemetry = await telemetryOnMemory(ctx.quick);
  const overrides = await overridesOnMemory(ctx.quick);

  // A round the fallback answered part of measures the fallback, not Redis: the median is taken
  // over the clean rounds when there is one.
  const clean = (id: DecisionsId) => {
    const all = runs.get(id)!;
    const kept = all.filter((_, k) => degradedIn.get(id)![k] === 0);
    return kept.length > 0 ? kept : all;
  };
  const perSecond = new Map<DecisionsId, number>();
  for (const c of contenders) perSecond.set(c.id, medianByThroughput(clean(c.id)).perSecond);
  const roundsOf = (id: DecisionsId) => runs.get(id)!.map((r) => r.perSecond);
  // Contenders of one round ran minutes apart at most, those of different rounds longer: the
  // machine's speed drifts less within a round, so ratios are taken there, then their median.
  const pairedBy = (value: (run: MeasuredRun) => number) => (a: DecisionsId, b: DecisionsId) => {
    const ratios: number[] = [];
    for (let k = 0; k < ROUNDS; k++) {
      if (degradedIn.get(a)![k] > 0 || degradedIn.get(b)![k] > 0) continue;
      ratios.push(value(runs.get(a)![k]) / value(runs.get(b)![k]));
    }
    return ratios.length === 0 ? NaN : median(ratios);
  };
  const pairedRatio = pairedBy((run) => run.perSecond);
  const redisCpuRatio = pairedBy((run) => run.server.cpuMicros / run.decisions);
  const redis = compareInline(roundsOf('ours:fixed-window'), roundsOf('ours:fixed-window:inline'));
  const rowOf = (c: Contender) => {
    const median = medianByThroughput(clean(c.id));
    const spread = roundsOf(c.id)
      .map((v, k) => integer(v) + (degradedIn.get(c.id)![k] > 0 ? '*' : ''))
      .join(' / ');
    const degraded = limiters.get(c.id)?.degraded() ?? 0;
    const per = (micros: number) => fixed(micros / median.decisions);
    return [
      c.label,
      c.library,
      integer(median.perSecond),
      spread,
      ms(median.p50Ms),
      ms(median.p99Ms),
      ratio(pairedRatio(c.id, c.floor)),
      c.flexible === undefined ? '–' : ratio(pairedRatio(c.id, c.flexible)),
      per(median.nodeCpuMicros),
      per(median.server.cpuMicros),
      per(median.server.scriptMicros),
      integer(rejected.get(c.id)!) + (degraded > 0 ? ` (${integer(degraded)} degraded)` : ''),
    ];
  };
  const bad = contenders.filter((c) => rejected.get(c.id)! > 0 || limiters.get(c.id)!.degraded());

  const markdown = [
    '## Decisions: throughput on one Redis',
    '',
    `${integer(total)} decisions over ${integer(KEYS)} keys (key = i mod ${integer(KEYS)}), ` +
      `${IN_FLIGHT} in flight (closed loop), limit ${integer(LIMIT.threshold)} per ` +
      `${LIMIT.periodMs / 1000} s for every contender, so nothing may be rejected. ${ROUNDS} ` +
      `rounds, each running every contender once in rotated order after ${integer(warmup)} ` +
      'warm-up decisions, FLUSHALL between rounds. Each contender has its own client, of the ' +
      'library in the "client" column (ioredis 6 or node-redis 6, default options unless the ' +
      'row says otherwise), and its own key prefix. The floor, ours and rate-limiter-flexible ' +
      'run once on each library; "vs floor" and "vs rate-limiter-flexible" divide by the floor ' +
      'and rate-limiter-flexible on the same library, within each round, and show the median of ' +
      'those ratios. A row shows the median round by ' +
      'decisions/s and that round’s latency percentiles; "rounds" lists all of them, in round ' +
      'order. A round marked * had decisions answered by the fallback because Redis was later ' +
      'than the 100 ms timeout (a stall of this process or the VM): it measures the fallback, ' +
      'so the median is taken over the other rounds when there are any. Each worker of the loop ' +
      'yields to the event loop once per round of the workers, as a server reading requests ' +
      'from sockets does, so that timers and the breaker’s probe still run.',
    '',
    table(COLUMNS, CONTENDERS.map(rowOf)),
    '',
    'Ours is measured through `RateLimitService.consume(key, policy)` on a Nest app built with ' +
      '`RateLimitModule.forRoot({ redis: client, keyPrefix })`, the client being an ioredis ' +
      '`Redis` or a connected node-redis `createClient()`: the block cache, the 100 ms ' +
      'deadline and the fallback are all in the path, as in production. Every ours row passes ' +
      'one policy object held in a constant, except "policy written inline", which writes ' +
      "`{ algorithm: 'fixed-window', period: 60, threshold: 1000 }` in the call (a new " +
      'object every call; see the table below). The floor is the least a sorted-set log can ' +
      'cost: one EVALSHA of ZREMRANGEBYSCORE, ZCARD, ZADD, PEXPIRE with the time and member ' +
      'from the client, through ioredis `defineCommand` or node-redis `evalSha` of a script ' +
      'loaded once. rate-limiter-flexible runs one script (SET NX, INCRBY, PTTL): by EVALSHA ' +
      'on ioredis; on node-redis, where it needs `useRedisPackage: true`, by EVAL with the ' +
      'whole script on every call. @nest-lab sends its whole script with EVAL on every call. ' +
      'The three µs columns are costs per decision in the median round: CPU of this process ' +
      '(the limiter’s client side plus the load generator, the same for every row), CPU of ' +
      'redis-server (INFO cpu: parsing and I/O included) and time inside its scripts and ' +
      'functions (INFO commandstats of EVAL, EVALSHA and FCALL). With two cores, one for each, ' +
      'the side nearer to a full core is the bottleneck.',
    ...(valkey === undefined
      ? []
      : ['', renderValkeyRows(table(COLUMNS, VALKEY_CONTENDERS.map(rowOf)), pairedRatio)]),
    ...(bad.length > 0
      ? ['', `**Warning:** rejected or degraded decisions in: ${bad.map(describe).join(', ')}.`]
      : []),
    '',
    renderInline(redis, memory, ctx.quick),
    '',
    renderTelemetry(telemetry),
    '',
    renderOverrides(overrides),
  ].join('\n');
  return {
    markdown,
    perSecond,
    ratio: pairedRatio,
    redisCpuRatio,
    inline: { redis, memory },
    telemetry,
    overrides,
  };
}

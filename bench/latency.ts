/**
 * Latency at low load: what batching costs a decision when there is little or nothing to batch.
 * Ours with the default `batchSize` against `batchSize: 1` (each decision its own call, as the
 * store sent them before batches), interleaved round by round, at 1 and at 16 in flight.
 */
import { type BenchContext, progress } from './support/bench-context.js';
import { median, runClosedLoop, type LoopResult } from './support/closed-loop.js';
import { LIMIT } from './support/decisions-contenders.js';
import { type Limiter } from './support/limiter.js';
import { fixed, integer, ms, ratio, table } from './support/markdown.js';
import { ourLimiter } from './support/our-limiter.js';

const KEYS = 10_000;
const ROUNDS = 5;
const LOADS = [1, 16] as const;

type Build = 'batched' | 'one-by-one';
const BUILDS: readonly Build[] = ['batched', 'one-by-one'];
const LABELS: Record<Build, string> = {
  batched: 'ours fixed-window, default batchSize (8)',
  'one-by-one': 'ours fixed-window, batchSize: 1',
};

export interface LatencyRow {
  readonly build: Build;
  readonly inFlight: number;
  /** Medians over the rounds. */
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly perSecond: number;
}

export interface LatencyResult {
  readonly markdown: string;
  readonly rows: readonly LatencyRow[];
  /** Batched over one by one, at `inFlight`: the median of the per-round ratios of `field`. */
  readonly ratio: (inFlight: number, field: 'p50Ms' | 'p99Ms') => number;
}

export async function runLatency(ctx: BenchContext): Promise<LatencyResult> {
  const total = (inFlight: number) => (ctx.quick ? 1000 : 10_000) * (inFlight === 1 ? 1 : 4);
  const keys = Array.from({ length: KEYS }, (_, k) => `user:${k}`);
  const limiters = new Map<Build, Limiter>();
  const runs = new Map<string, LoopResult[]>();
  const policy = {
    algorithm: 'fixed-window' as const,
    period: LIMIT.periodMs / 1000,
    threshold: LIMIT.threshold,
  };
  try {
    for (const build of BUILDS) {
      limiters.set(
        build,
        await ourLimiter(ctx.redisUrl, {
          prefix: `latency-${build}`,
          policy,
          batchSize: build === 'batched' ? undefined : 1,
        }),
      );
    }
    for (let round = 0; round < ROUNDS; round++) {
      await ctx.admin.flushall();
      for (const inFlight of LOADS) {
        // Alternated, so neither build always runs first.
        const order = round % 2 === 0 ? BUILDS : [...BUILDS].reverse();
        for (const build of order) {
          const limiter = limiters.get(build)!;
          const decide = (i: number) => limiter.decide(keys[i % KEYS]);
          await runClosedLoop(total(inFlight) / 10, inFlight, decide);
          const run = await runClosedLoop(total(inFlight), inFlight, decide);
          const id = `${build}@${inFlight}`;
          runs.set(id, [...(runs.get(id) ?? []), run]);
          progress('latency', `round ${round + 1}/${ROUNDS}  ${id}: p50 ${ms(run.p50Ms)} ms`);
        }
      }
    }
  } finally {
    for (const limiter of limiters.values()) await limiter.close();
  }
  const of = (build: Build, inFlight: number) => runs.get(`${build}@${inFlight}`)!;
  const rows: LatencyRow[] = LOADS.flatMap((inFlight) =>
    BUILDS.map((build) => ({
      build,
      inFlight,
      p50Ms: median(of(build, inFlight).map((r) => r.p50Ms)),
      p99Ms: median(of(build, inFlight).map((r) => r.p99Ms)),
      perSecond: median(of(build, inFlight).map((r) => r.perSecond)),
    })),
  );
  const pairedRatio = (inFlight: number, field: 'p50Ms' | 'p99Ms') => {
    const batched = of('batched', inFlight);
    const alone = of('one-by-one', inFlight);
    return median(batched.map((r, k) => r[field] / alone[k][field]));
  };
  const markdown = [
    '## Latency at low load: batches against one call per decision',
    '',
    `Ours (fixed window, the same limit as above) through \`RateLimitService.consume\`, with ` +
      'the default `batchSize` and with `batchSize: 1`, which sends each decision as its own ' +
      `call. ${ROUNDS} rounds; in each, both at 1 in flight (${integer(total(1))} decisions) ` +
      `and at 16 (${integer(total(16))}), in alternating order, after a warm-up of a tenth as ` +
      'many. Percentiles and decisions/s are medians over the rounds; "vs batchSize: 1" is the ' +
      'median of the per-round ratios.',
    '',
    table(
      [
        'contender',
        'in flight',
        'decisions/s',
        'p50 ms',
        'p99 ms',
        'p50 vs batchSize: 1',
        'p99 vs batchSize: 1',
      ],
      rows.map((r) => [
        LABELS[r.build],
        String(r.inFlight),
        integer(r.perSecond),
        fixed(r.p50Ms, 3),
        fixed(r.p99Ms, 3),
        r.build === 'batched' ? ratio(pairedRatio(r.inFlight, 'p50Ms')) : '–',
        r.build === 'batched' ? ratio(pairedRatio(r.inFlight, 'p99Ms')) : '–',
      ]),
    ),
  ].join('\n');
  return { markdown, rows, ratio: pairedRatio };
}

/**
 * The HTTP section of the benchmark: the same small Nest app on Express and on Fastify, with no
 * limiter, with ours on Redis and on memory, and with @nestjs/throttler on memory and on Redis.
 */
import { runLoad } from './load.js';
import { startServer } from './server-process.js';
import {
  ADAPTERS,
  type Adapter,
  type Config,
  CONFIGS,
  type Durations,
  FULL_RUN,
  QUICK_RUN,
} from './workload.js';

export { HTTP_WORKLOAD_NOTE } from './workload.js';

export interface HttpRow {
  adapter: Adapter;
  config: string;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  /** Must be 0: the limit is far above the load. Counted over every run of the row. */
  non2xx: number;
  /** Our decisions answered from memory because Redis was late: must be 0 for a Redis row. */
  degradedDecisions?: number;
}

export interface HttpCase {
  readonly adapter: Adapter;
  readonly config: Config;
}

export const ALL_HTTP_CASES: readonly HttpCase[] = ADAPTERS.flatMap((adapter) =>
  CONFIGS.map((config) => ({ adapter, config })),
);

export interface HttpBenchOptions {
  redisUrl: string;
  quick: boolean;
  /** A subset to run, e.g. for profiling; default every adapter x config. */
  cases?: readonly HttpCase[];
  /** Directory for a V8 CPU profile of each app process; default `$BENCH_CPU_PROF`. */
  cpuProfileDir?: string;
}

const log = (line: string) => process.stderr.write(`[http] ${line}\n`);

async function measureOnce(
  testCase: HttpCase,
  durations: Durations,
  options: HttpBenchOptions,
): Promise<HttpRow> {
  const server = await startServer({
    ...testCase,
    redisUrl: options.redisUrl,
    cpuProfileDir: options.cpuProfileDir ?? process.env.BENCH_CPU_PROF,
  });
  let row: HttpRow;
  let degradedDecisions: number;
  try {
    const warmup = await runLoad(server.port, durations.warmupSeconds);
    const measured = await runLoad(server.port, durations.measureSeconds);
    row = {
      adapter: testCase.adapter,
      config: testCase.config,
      reqPerSec: Math.round(measured.reqPerSec),
      p50Ms: measured.p50Ms,
      p99Ms: measured.p99Ms,
      non2xx: warmup.failures + measured.failures,
    };
  } finally {
    // Also on a failed run: no app process outlives its case.
    degradedDecisions = await server.stop();
  }
  return { ...row, degradedDecisions };
}

/**
 * Runs every case once per round, the second round in reverse order so that drift (thermal,
 * other work on the machine) does not always favour the same configurations, and keeps each
 * case's faster run: noise on a shared machine only ever slows a run down. Failures and
 * degraded decisions are summed over all runs, so none is hidden by the choice.
 */
export async function runHttpBench(options: HttpBenchOptions): Promise<HttpRow[]> {
  const durations = options.quick ? QUICK_RUN : FULL_RUN;
  const cases = options.cases ?? ALL_HTTP_CASES;
  const interleaved = CONFIGS.flatMap((config) =>
    ADAPTERS.map((adapter) => cases.find((c) => c.adapter === adapter && c.config === config)),
  ).filter((c): c is HttpCase => c !== undefined);

  const best = new Map<HttpCase, HttpRow>();
  for (let round = 0; round < durations.rounds; round++) {
    const order = round % 2 === 0 ? interleaved : [...interleaved].reverse();
    for (const testCase of order) {
      const row = await measureOnce(testCase, durations, options);
      log(
        `round ${round + 1}/${durations.rounds} ${row.adapter} / ${row.config}: ` +
          `${row.reqPerSec} req/s, p50 ${row.p50Ms.toFixed(2)} ms, p99 ${row.p99Ms.toFixed(2)} ms, ` +
          `non-2xx ${row.non2xx}, degraded ${row.degradedDecisions}`,
      );
      const previous = best.get(testCase);
      const kept = previous === undefined || row.reqPerSec > previous.reqPerSec ? row : previous;
      best.set(testCase, {
        ...kept,
        non2xx: row.non2xx + (previous?.non2xx ?? 0),
        degradedDecisions: (row.degradedDecisions ?? 0) + (previous?.degradedDecisions ?? 0),
      });
    }
  }
  return cases.flatMap((c) => best.get(c) ?? []);
}

/**
 * The HTTP section on its own, against a private redis-server:
 *
 *   npx tsc -p bench/tsconfig.json && node scripts/copy-lua.js dist-bench/lib/algorithms \
 *     && node dist-bench/bench/http/standalone.js [--quick] [--only 'fastify:ours (Redis)' ...]
 *
 * BENCH_CPU_PROF=<dir> writes a CPU profile of each app process into <dir>.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, spawnRedisServer, stopProcess } from '../../test/support/redis-process.js';
import { ALL_HTTP_CASES, HTTP_WORKLOAD_NOTE, type HttpRow, runHttpBench } from './run.js';

const { values } = parseArgs({
  options: { quick: { type: 'boolean', default: false }, only: { type: 'string', multiple: true } },
});
const cases = values.only?.map((wanted) => {
  const found = ALL_HTTP_CASES.find((c) => `${c.adapter}:${c.config}` === wanted);
  if (!found) {
    const known = ALL_HTTP_CASES.map((c) => `${c.adapter}:${c.config}`).join('\n  ');
    throw new Error(`--only ${wanted}: no such case; known:\n  ${known}`);
  }
  return found;
});

function printRows(rows: readonly HttpRow[]): void {
  console.log('| adapter | config | req/s | ratio to no limiter | p50 ms | p99 ms | non-2xx |');
  console.log('|---|---|---:|---:|---:|---:|---:|');
  for (const row of rows) {
    const base = rows.find((r) => r.adapter === row.adapter && r.config === 'no limiter');
    const ratio = base ? (row.reqPerSec / base.reqPerSec).toFixed(2) : '—';
    const flag = row.non2xx === 0 && !row.degradedDecisions ? '' : ' ⚠';
    const degraded = row.degradedDecisions ? ` (${row.degradedDecisions} degraded)` : '';
    console.log(
      `| ${row.adapter} | ${row.config} | ${row.reqPerSec} | ${ratio} | ${row.p50Ms.toFixed(2)} ` +
        `| ${row.p99Ms.toFixed(2)} | ${row.non2xx}${degraded}${flag} |`,
    );
  }
}

const dir = mkdtempSync(join(tmpdir(), 'bench-http-redis-'));
const port = await freePort();
const redis = await spawnRedisServer(port, dir, [], 'REDIS_URL');
try {
  const rows = await runHttpBench({
    redisUrl: `redis://127.0.0.1:${port}`,
    quick: values.quick,
    cases,
  });
  console.log(HTTP_WORKLOAD_NOTE + '\n');
  printRows(rows);
} finally {
  await stopProcess(redis);
  rmSync(dir, { recursive: true, force: true });
}

/**
 * `npm run bench`: ours against the floor and the usual alternatives, in one process, one run,
 * against one private redis-server, so every row saw the same machine and the same server.
 *
 *   npm run bench -- [--only decisions,alone,cluster,latency,flood,memory,http,console] [--quick] [--write]
 *
 * Tables go to stdout (progress to stderr); --write also rewrites bench/RESULTS.md, keeping the
 * hand-written notes at its end.
 */
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { type AloneResult, runAlone } from './alone.js';
import { type ClusterResult, runCluster } from './cluster.js';
import { type ConsoleResult, runConsole } from './console.js';
import { type DecisionsResult, runDecisions } from './decisions.js';
import { type FloodResult, runFlood } from './flood.js';
import { type LatencyResult, runLatency } from './latency.js';
import { type MemoryResult, runMemory } from './memory.js';
import { type BenchContext, progress } from './support/bench-context.js';
import { parseOptions } from './support/bench-options.js';
import { type HttpRow, renderHttpRows } from './support/http-rows.js';
import { closeClient } from './support/limiter.js';
import { describeMachine } from './support/machine.js';
import { startPrivateRedis, startPrivateValkey } from './support/private-redis.js';
import { writeResults } from './support/results-file.js';
import { renderTargets } from './support/targets.js';

// Far past a full run (3–6 minutes without HTTP, about 4 more with it): a hung run still ends.
const WATCHDOG_MS = 20 * 60_000;
const RESULTS_PATH = fileURLToPath(new URL('../../bench/RESULTS.md', import.meta.url));

const options = parseOptions(process.argv.slice(2));
const command = [
  'npm run bench',
  ...(process.argv.length > 2 ? ['--', ...process.argv.slice(2)] : []),
].join(' ');

const redis = await startPrivateRedis();
// Only the decisions section has Valkey rows.
const valkey = options.sections.has('decisions') ? await startPrivateValkey() : undefined;
const valkeyServer = valkey !== undefined && 'url' in valkey ? valkey : undefined;
const stopServers = () => Promise.all([redis.stop(), valkeyServer?.stop()]);
const watchdog = setTimeout(() => {
  process.stderr.write(`bench: not done after ${WATCHDOG_MS / 60_000} minutes, giving up\n`);
  void stopServers().finally(() => process.exit(1));
}, WATCHDOG_MS).unref();
const admin = new Redis(redis.url);
const valkeyAdmin = valkeyServer && new Redis(valkeyServer.url);
const parts: string[] = [];
const emit = (markdown: string) => {
  parts.push(markdown);
  console.log(`${markdown}\n`);
};

try {
  const machine = await describeMachine(admin);
  const valkeyVersion = valkeyAdmin && (await serverVersion(valkeyAdmin, 'valkey_version'));
  emit(
    [
      '# Benchmark results',
      '',
      `- date: ${new Date().toISOString()}`,
      `- machine: ${machine.cores} cores (os.availableParallelism), ${machine.cpu}`,
      `- Node ${machine.node}, Redis ${machine.redis} (a private redis-server on 127.0.0.1, ` +
        'shared by every contender)',
      valkeyVersion === undefined
        ? `- no Valkey rows: ${valkey !== undefined && 'why' in valkey ? valkey.why : 'no decisions section'}`
        : `- Valkey ${valkeyVersion} (a private valkey-server on 127.0.0.1, for the Valkey rows)`,
      `- command: \`${command}\``,
      ...(options.quick
        ? ['- **quick run: 10× smaller workloads, a smoke check, not results**']
        : []),
    ].join('\n'),
  );

  const ctx: BenchContext = {
    redisUrl: redis.url,
    admin,
    valkey: valkeyServer && valkeyAdmin && { url: valkeyServer.url, admin: valkeyAdmin },
    quick: options.quick,
  };
  let decisions: DecisionsResult | undefined;
  let alone: AloneResult | undefined;
  let cluster: ClusterResult | undefined;
  let latency: LatencyResult | undefined;
  let flood: FloodResult | undefined;
  let memory: MemoryResult | undefined;
  let http: HttpRow[] | undefined;
  let consoleCost: ConsoleResult | undefined;
  if (options.sections.has('decisions')) {
    decisions = await runDecisions(ctx);
    emit(decisions.markdown);
  }
  if (options.sections.has('alone')) {
    alone = await runAlone(ctx);
    emit(alone.markdown);
  }
  if (options.sections.has('cluster')) {
    cluster = await runCluster(ctx);
    emit(cluster.markdown);
  }
  if (options.sections.has('latency')) {
    latency = await runLatency(ctx);
    emit(latency.markdown);
  }
  if (options.sections.has('flood')) {
    flood = await runFlood(ctx);
    emit(flood.markdown);
  }
  if (options.sections.has('memory')) {
    memory = await runMemory(ctx);
    emit(memory.markdown);
  }
  if (options.sections.has('http')) {
    // Loaded only when asked for: it starts app processes and needs its own dependencies.
    const section = await import('./http/run.js');
    await admin.flushall();
    progress('http', 'starting');
    http = await section.runHttpBench({ redisUrl: redis.url, quick: options.quick });
    emit(renderHttpRows(http, section.HTTP_WORKLOAD_NOTE));
  }
  if (options.sections.has('console')) {
    consoleCost = await runConsole(ctx);
    emit(consoleCost.markdown);
  }
  emit(
    renderTargets({
      decisions,
      alone,
      cluster,
      latency,
      flood,
      memory,
      http,
      console: consoleCost,
    }),
  );

  if (options.write) {
    writeResults(RESULTS_PATH, parts.join('\n\n'));
    progress('bench', `wrote ${RESULTS_PATH}`);
  }
} finally {
  clearTimeout(watchdog);
  await closeClient(admin);
  if (valkeyAdmin) await closeClient(valkeyAdmin);
  await stopServers();
}

/** A field of INFO server, such as `valkey_version`. */
async function serverVersion(client: Redis, field: string): Promise<string> {
  const info = await client.info('server');
  return new RegExp(`^${field}:(\\S+)`, 'm').exec(info)?.[1] ?? 'unknown';
}

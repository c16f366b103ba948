/** Starts the benchmark app in a child process and stops it, never leaving one behind. */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { stopProcess } from '../../test/support/redis-process.js';
import { type Adapter, type Config } from './workload.js';

const APP_ENTRY = fileURLToPath(new URL('./app.js', import.meta.url));
const READY_TIMEOUT_MS = 20_000;

export interface BenchServer {
  readonly port: number;
  /** Stops the app; resolves with how many of our decisions fell back from Redis to memory. */
  stop(): Promise<number>;
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

// A parent that exits without stopping a child (an exception, process.exit) still kills it;
// a parent killed outright closes the child's stdin, which the child treats as "stop".
function killLeftoversOnExit(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const child of live) child.kill('SIGKILL');
  });
}

export interface ServerOptions {
  readonly adapter: Adapter;
  readonly config: Config;
  readonly redisUrl: string;
  /** When set, the child writes a V8 CPU profile into this directory when it stops. */
  readonly cpuProfileDir?: string;
}

export function startServer(options: ServerOptions): Promise<BenchServer> {
  killLeftoversOnExit();
  const profiling = options.cpuProfileDir
    ? ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfileDir}`]
    : [];
  const child = spawn(process.execPath, [...profiling, APP_ENTRY], {
    env: {
      ...process.env,
      BENCH_ADAPTER: options.adapter,
      BENCH_CONFIG: options.config,
      BENCH_REDIS_URL: options.redisUrl,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  live.add(child);
  child.once('exit', () => live.delete(child));

  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const what = `${options.adapter} / ${options.config}`;

  const stop = async () => {
    await stopProcess(child);
    const match = /^degraded (\d+)$/m.exec(stdout);
    return match ? Number(match[1]) : 0;
  };

  return new Promise<BenchServer>((resolve, reject) => {
    const fail = (reason: string) => {
      clearTimeout(timer);
      child.stdout.off('data', onData);
      void stopProcess(child, 'SIGKILL').then(() =>
        reject(new Error(`bench app (${what}) ${reason}\n--- its stderr ---\n${stderr}`)),
      );
    };
    const timer = setTimeout(
      () => fail(`printed no "listening" line within ${READY_TIMEOUT_MS} ms`),
      READY_TIMEOUT_MS,
    );
    const onData = () => {
      const match = /^listening (\d+)$/m.exec(stdout);
      if (!match) return;
      clearTimeout(timer);
      child.stdout.off('data', onData);
      child.off('exit', onEarlyExit);
      resolve({ port: Number(match[1]), stop });
    };
    const onEarlyExit = (code: number | null, signal: string | null) =>
      fail(`exited (code ${code}, signal ${signal}) before it was ready`);
    child.stdout.on('data', onData);
    child.once('exit', onEarlyExit);
    child.once('error', (error) => fail(`could not start: ${error.message}`));
  });
}

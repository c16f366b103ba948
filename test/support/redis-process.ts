/**
 * Spawning and stopping private server processes, for single servers and cluster nodes: redis-server,
 * or valkey-server in the Jest project that names it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

const READY_TIMEOUT_MS = 10_000;

/** The server a Jest project runs its specs on; set per test file from the project's `globals`. */
export interface TestServer {
  readonly name: 'redis' | 'valkey';
  /** The binary to spawn: `redis-server` from PATH, or valkey-server's path. */
  readonly command: string;
}

const REDIS: TestServer = { name: 'redis', command: 'redis-server' };

/** The server of this test file's project; redis-server outside Jest (benchmarks). */
export function testServer(): TestServer {
  return (globalThis as { __TEST_SERVER__?: TestServer }).__TEST_SERVER__ ?? REDIS;
}

/**
 * The variable naming an existing server (or cluster) to use instead of private ones; it names a
 * Redis server, so the valkey project ignores it and always starts its own.
 */
export function externalServer(envVar: 'REDIS_URL' | 'REDIS_CLUSTER_URLS'): string | undefined {
  return testServer().name === 'redis' ? process.env[envVar] : undefined;
}

/** Finds a port nothing listens on, by letting the OS pick one. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** The error for a missing binary, with the ways out. */
export const notOnPath = (command: string, envVar: string) =>
  testServer().name === 'valkey' && !command.endsWith('redis-cli')
    ? new Error(`${command} does not exist: set VALKEY_SERVER to a valkey-server binary`)
    : new Error(
        `${command} is not on PATH: install it (apt-get install -y redis-server) or set ${envVar}`,
      );

/** For a sentinel: its config file, which names the master to watch and which it rewrites. */
export interface SentinelMode {
  readonly configFile: string;
}

/**
 * Starts `server` (by default the project's: `redis-server` or `valkey-server`) on `port` with
 * nothing saved to disk, and resolves once it accepts connections. `envVar` names the variable
 * that points the tests at an external server instead.
 */
export function spawnRedisServer(
  port: number,
  dir: string,
  extraArgs: readonly string[],
  envVar: string,
  sentinel?: SentinelMode,
  server: TestServer = testServer(),
): Promise<ChildProcess> {
  const ready = sentinel === undefined ? 'Ready to accept connections' : '+monitor master';
  const args = [
    ...(sentinel === undefined ? [] : [sentinel.configFile, '--sentinel']),
    ...['--port', String(port), '--bind', '127.0.0.1'],
    ...['--save', '', '--appendonly', 'no', '--dir', dir],
    ...extraArgs,
  ];
  const { command } = server;
  return new Promise((resolve, reject) => {
    const proc = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`${command} was not ready within ${READY_TIMEOUT_MS}ms:\n${output}`));
    }, READY_TIMEOUT_MS);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(ready)) {
        clearTimeout(timer);
        proc.stdout?.off('data', onData);
        proc.stdout?.resume();
        resolve(proc);
      }
    };
    proc.stdout?.on('data', onData);
    proc.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    proc.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(err.code === 'ENOENT' ? notOnPath(command, envVar) : err);
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${command} exited with ${code} before it was ready:\n${output}`));
    });
  });
}

export const isRunning = (proc: ChildProcess) => proc.exitCode === null && proc.signalCode === null;

/** Sends `signal` (SIGKILL after 5 s if SIGTERM is ignored) and resolves once the process exited. */
export function stopProcess(proc: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (!isRunning(proc)) return Promise.resolve();
  return new Promise((resolve) => {
    const late = setTimeout(() => proc.kill('SIGKILL'), 5000);
    proc.once('exit', () => {
      clearTimeout(late);
      resolve();
    });
    proc.kill(signal);
  });
}

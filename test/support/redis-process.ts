/** Spawning and stopping private redis-server processes, for single servers and cluster nodes. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

const READY_TIMEOUT_MS = 10_000;

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

/** The error for a missing binary, with the two ways out. */
export const notOnPath = (command: string, envVar: string) =>
  new Error(
    `${command} is not on PATH: install it (apt-get install -y redis-server) or set ${envVar}`,
  );

/** For a sentinel: its config file, which names the master to watch and which it rewrites. */
export interface SentinelMode {
  readonly configFile: string;
}

/**
 * Starts `redis-server` on `port` with nothing saved to disk, and resolves once it accepts
 * connections. `envVar` names the variable that points the tests at an external server instead.
 */
export function spawnRedisServer(
  port: number,
  dir: string,
  extraArgs: readonly string[],
  envVar: string,
  sentinel?: SentinelMode,
): Promise<ChildProcess> {
  const ready = sentinel === undefined ? 'Ready to accept connections' : '+monitor master';
  const args = [
    ...(sentinel === undefined ? [] : [sentinel.configFile, '--sentinel']),
    ...['--port', String(port), '--bind', '127.0.0.1'],
    ...['--save', '', '--appendonly', 'no', '--dir', dir],
    ...extraArgs,
  ];
  return new Promise((resolve, reject) => {
    const proc = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`redis-server was not ready within ${READY_TIMEOUT_MS}ms:\n${output}`));
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
      reject(err.code === 'ENOENT' ? notOnPath('redis-server', envVar) : err);
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited with ${code} before it was ready:\n${output}`));
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

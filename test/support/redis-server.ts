import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

/** A redis-server the tests own (or the one `REDIS_URL` names). */
export interface TestRedis {
  readonly url: string;
  readonly port: number;
  /** True when this is the server from `REDIS_URL`, which tests must not stop. */
  readonly external: boolean;
  /** A new client; closed by `stop()`. */
  client(): Redis;
  /** Kills the server process (fault tests); not allowed on the `REDIS_URL` server. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts the server again on the same port, empty. */
  restart(): Promise<void>;
  stop(): Promise<void>;
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

/**
 * Starts a private redis-server on a free port, or uses `REDIS_URL` when it is set.
 * Fault tests need servers of their own to kill, so the private one is the default.
 */
export async function startRedis(extraArgs: string[] = []): Promise<TestRedis> {
  const clients: Redis[] = [];
  const client = (url: string) => () => {
    const c = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1 });
    clients.push(c);
    return c;
  };
  const closeClients = () => Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));

  const external = process.env.REDIS_URL;
  if (external) {
    const refuse = () =>
      Promise.reject(new Error('fault tests need a private redis-server; unset REDIS_URL'));
    const port = Number(new URL(external).port || 6379);
    return {
      url: external,
      port,
      external: true,
      client: client(external),
      kill: refuse,
      restart: refuse,
      stop: async () => void (await closeClients()),
    };
  }

  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'rate-limit-redis-'));
  let proc = await spawnServer(port, dir, extraArgs);
  const url = `redis://127.0.0.1:${port}`;
  return {
    url,
    port,
    external: false,
    client: client(url),
    kill: (signal = 'SIGKILL') => stopProcess(proc, signal),
    restart: async () => {
      proc = await spawnServer(port, dir, extraArgs);
    },
    stop: async () => {
      await closeClients();
      await stopProcess(proc);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function spawnServer(port: number, dir: string, extraArgs: string[]): Promise<ChildProcess> {
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    ...extraArgs,
  ];
  return new Promise((resolve, reject) => {
    const proc = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) {
        proc.stdout?.off('data', onData);
        proc.stdout?.resume();
        resolve(proc);
      }
    };
    proc.stdout?.on('data', onData);
    proc.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    proc.on('error', (err: NodeJS.ErrnoException) => {
      reject(
        err.code === 'ENOENT'
          ? new Error(
              'redis-server is not on PATH: install it (apt-get install -y redis-server) or set REDIS_URL',
            )
          : err,
      );
    });
    proc.on('exit', (code) =>
      reject(new Error(`redis-server exited with ${code} before it was ready:\n${output}`)),
    );
  });
}

function stopProcess(proc: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    proc.once('exit', () => resolve());
    proc.kill(signal);
  });
}

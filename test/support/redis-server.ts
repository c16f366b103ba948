import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { type RedisClient } from '../../lib/stores/redis/clients/redis-client.js';
import { type ClientKind, closeClient, openClient, type OpenOptions } from './clients.js';
import {
  externalServer,
  freePort,
  isRunning,
  spawnRedisServer,
  stopProcess,
} from './redis-process.js';

export { freePort };

/** A redis-server the tests own (or the one `REDIS_URL` names). */
export interface TestRedis {
  readonly url: string;
  readonly port: number;
  /** True when this is the server from `REDIS_URL`, which tests must not stop. */
  readonly external: boolean;
  /** A new ioredis client, for setting up and inspecting; closed by `stop()`. */
  client(): Redis;
  /**
   * One ioredis client, connected before the tests start, for stores built synchronously: a store
   * sends nothing on a client that is still connecting.
   */
  readonly shared: Redis;
  /** A new connected client of either library, as a store would be given; closed by `stop()`. */
  connect(kind: ClientKind, options?: OpenOptions): Promise<RedisClient>;
  /** Kills the server process (fault tests); not allowed on the `REDIS_URL` server. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /**
   * Freezes the process (`SIGSTOP`) or lets it run again (`SIGCONT`): its sockets stay open, and
   * nothing answers. Not allowed on the `REDIS_URL` server.
   */
  freeze(frozen: boolean): void;
  /** Starts the server again on the same port, empty. */
  restart(): Promise<void>;
  stop(): Promise<void>;
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
  const opened: RedisClient[] = [];
  const connect = (url: string) => async (kind: ClientKind, options?: OpenOptions) => {
    const { hostname, port } = new URL(url);
    const c = await openClient(kind, { host: hostname, port: Number(port || 6379) }, options);
    opened.push(c);
    return c;
  };
  const closeClients = () =>
    Promise.all([
      ...clients.map((c) => c.quit().catch(() => c.disconnect())),
      ...opened.map(closeClient),
    ]);

  const external = externalServer('REDIS_URL');
  if (external) {
    const refuse = () =>
      Promise.reject(new Error('fault tests need a private redis-server; unset REDIS_URL'));
    const port = Number(new URL(external).port || 6379);
    const shared = client(external)();
    await shared.ping();
    return {
      url: external,
      port,
      external: true,
      shared,
      client: client(external),
      connect: connect(external),
      kill: refuse,
      freeze: () => {
        throw new Error('fault tests need a private redis-server; unset REDIS_URL');
      },
      restart: refuse,
      stop: async () => void (await closeClients()),
    };
  }

  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'rate-limit-redis-'));
  let proc = await spawnRedisServer(port, dir, extraArgs, 'REDIS_URL');
  const url = `redis://127.0.0.1:${port}`;
  const shared = client(url)();
  await shared.ping();
  return {
    url,
    port,
    external: false,
    shared,
    client: client(url),
    connect: connect(url),
    kill: (signal = 'SIGKILL') => stopProcess(proc, signal),
    freeze: (frozen) => {
      if (isRunning(proc)) proc.kill(frozen ? 'SIGSTOP' : 'SIGCONT');
    },
    restart: async () => {
      proc = await spawnRedisServer(port, dir, extraArgs, 'REDIS_URL');
    },
    stop: async () => {
      // A frozen server would not hear the SIGTERM.
      if (isRunning(proc)) proc.kill('SIGCONT');
      await closeClients();
      await stopProcess(proc);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

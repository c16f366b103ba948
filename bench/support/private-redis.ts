/**
 * The servers every section talks to: a private redis-server, and for the Valkey rows a private
 * valkey-server, each on a free port and gone when the bench ends.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  freePort,
  spawnRedisServer,
  stopProcess,
  type TestServer,
} from '../../test/support/redis-process.js';

export interface PrivateRedis {
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * Never the machine's own server or REDIS_URL: a shared server would mix other traffic into the
 * numbers and keep state from earlier runs.
 */
export function startPrivateRedis(): Promise<PrivateRedis> {
  return startPrivate({ name: 'redis', command: 'redis-server' });
}

/**
 * A valkey-server from `$VALKEY_SERVER`, else `../shared/bin/valkey-server` beside the project
 * (as the tests find it); `why` instead when there is none, and the Valkey rows are left out.
 */
export async function startPrivateValkey(): Promise<PrivateRedis | { why: string }> {
  // Compiled to dist-bench/bench/support: the project root is three levels up.
  const root = fileURLToPath(new URL('../../../', import.meta.url));
  const command = process.env.VALKEY_SERVER ?? join(root, '../shared/bin/valkey-server');
  if (!existsSync(command)) {
    return { why: `no valkey-server at ${command} (set VALKEY_SERVER to one)` };
  }
  return startPrivate({ name: 'valkey', command });
}

async function startPrivate(server: TestServer): Promise<PrivateRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'rate-limit-bench-'));
  try {
    const proc = await spawnRedisServer(port, dir, [], 'PATH', undefined, server);
    return {
      url: `redis://127.0.0.1:${port}`,
      stop: async () => {
        await stopProcess(proc);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/** The one redis-server every section talks to: private, on a free port, gone when the bench ends. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, spawnRedisServer, stopProcess } from '../../test/support/redis-process.js';

export interface PrivateRedis {
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * Never the machine's own server or REDIS_URL: a shared server would mix other traffic into the
 * numbers and keep state from earlier runs.
 */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'rate-limit-bench-'));
  try {
    const proc = await spawnRedisServer(port, dir, [], 'PATH');
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

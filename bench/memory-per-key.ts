/**
 * Measures Redis memory per key for every algorithm with MEMORY USAGE, on a private
 * redis-server. Not a timed test: the numbers are byte counts, identical on every run.
 *
 *   npm run bench:memory
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { type Algorithm } from '../lib/algorithms/algorithm.js';
import { RedisStore } from '../lib/index.js';
import { resolvePolicy } from '../lib/rate-limit.policy.js';
import { startRedis } from '../test/support/redis-server.js';

const ALGORITHMS: Algorithm[] = [
  'sliding-window',
  'sliding-window-counter',
  'fixed-window',
  'token-bucket',
  'leaky-bucket',
];
// A realistic short key: prefix, route, IPv4 tracker and policy id.
const keyFor = (policyId: string) => `rl:{GET /a|ip:10.0.0.1}:${policyId}`;

async function usage(client: Redis, key: string): Promise<number> {
  const keys = await client.keys(`${key}*`);
  let total = 0;
  for (const k of keys) total += Number(await client.memory('USAGE', k, 'SAMPLES', '0'));
  return total;
}

async function main() {
  const redis = await startRedis();
  const client = new Redis(redis.url);
  const store = new RedisStore({ client });
  const rows: string[] = [];
  try {
    for (const algorithm of ALGORITHMS) {
      const policy = resolvePolicy({ algorithm, period: '1h', threshold: 100_000 }, 'bench');
      const key = keyFor(`${policy.id}-${randomUUID().slice(0, 4)}`);
      const sizes: Record<number, number> = {};
      for (let n = 1; n <= 1000; n++) {
        await store.consume([key], [policy], [1]);
        if ([1, 10, 100, 127, 200, 1000].includes(n)) sizes[n] = await usage(client, key);
      }
      const perEntry =
        algorithm === 'sliding-window' ? ((sizes[127] - sizes[1]) / 126).toFixed(1) : '—';
      rows.push(
        `| ${algorithm} | ${key.length} | ${sizes[1]} | ${sizes[100]} | ${sizes[1000]} | ${perEntry} |`,
      );
    }
  } finally {
    await client.quit();
    await redis.stop();
  }
  const version = (await import('node:child_process'))
    .execSync('redis-server --version')
    .toString()
    .trim();
  console.log(
    `Redis memory per key (MEMORY USAGE, bytes), ${version.split(' ').slice(0, 3).join(' ')}`,
  );
  console.log(
    '| algorithm | key length | after 1 request | after 100 | after 1000 | per entry below 128 |',
  );
  console.log('|---|---|---|---|---|---|');
  for (const row of rows) console.log(row);
}

await main();

/**
 * Redis memory per key: MEMORY USAGE (every element counted) of all the keys one limiter writes
 * for one client, after 1, 100 and 1000 requests. Byte counts, the same on every run.
 */
import { Redis } from 'ioredis';
import { type Algorithm, RedisStore } from '../lib/index.js';
import { RouteKeys } from '../lib/keys/route-keys.js';
import { resolvePolicy } from '../lib/policy/rate-limit.policy.js';
import { RATE_ALGORITHMS } from '../lib/algorithms/registry.js';
import { type BenchContext, progress } from './support/bench-context.js';
import { closeClient, type Limit, type Limiter } from './support/limiter.js';
import { fixed, table } from './support/markdown.js';
import { flexibleLimiter, nestLabLimiter } from './support/peer-limiters.js';
import { memoryOfAllKeys } from './support/redis-stats.js';

// A short, realistic client: one route, an IPv4 tracker, as the guard keys them.
const ROUTE = 'GET /a';
const TRACKER = 'ip:10.0.0.1';
const PREFIX = 'rl';
const LIMIT: Limit = { threshold: 1000, periodMs: 3_600_000 };
const CHECKPOINTS = [1, 100, 127, 1000];
/** The sorted set stays a compact listpack up to 128 entries (Redis's default). */
const LISTPACK_ENTRIES = 127;
const SMALL_KEY_ALGORITHMS: readonly Algorithm[] = [
  'leaky-bucket',
  'fixed-window',
  'sliding-window-counter',
];

export interface MemoryResult {
  readonly markdown: string;
  /** Bytes per in-window entry of the sliding log, below 128 entries. */
  readonly slidingBytesPerEntry: number;
  /** Largest key size seen for GCRA, the fixed window and the sliding counter. */
  readonly smallKeyBytes: ReadonlyMap<Algorithm, number>;
}

interface Subject {
  readonly limiter: string;
  readonly algorithm: string;
  readonly decide: () => Promise<unknown>;
  readonly close: () => Promise<void>;
}

export async function runMemory(ctx: BenchContext): Promise<MemoryResult> {
  const rows: string[][] = [];
  const sizes = new Map<string, number[]>();
  for (const start of subjects()) {
    const subject = await start(ctx.redisUrl);
    try {
      await ctx.admin.flushall();
      const measured: number[] = [];
      let stored: string[] = [];
      for (let n = 1; n <= CHECKPOINTS[CHECKPOINTS.length - 1]; n++) {
        await subject.decide();
        if (!CHECKPOINTS.includes(n)) continue;
        const usage = await memoryOfAllKeys(ctx.admin);
        measured.push(usage.bytes);
        stored = usage.keys;
      }
      sizes.set(subject.algorithm, measured);
      const at = (n: number) => measured[CHECKPOINTS.indexOf(n)];
      const perEntry =
        subject.algorithm === 'sliding-window'
          ? fixed((at(LISTPACK_ENTRIES) - at(1)) / (LISTPACK_ENTRIES - 1))
          : '—';
      rows.push([
        subject.limiter,
        subject.algorithm,
        stored.map((k) => `\`${k}\` (${k.length})`).join(', '),
        String(at(1)),
        String(at(100)),
        String(at(1000)),
        perEntry,
      ]);
      progress('memory', `${subject.limiter} ${subject.algorithm}: ${at(1)} B after 1 request`);
    } finally {
      await subject.close();
    }
  }

  const sliding = sizes.get('sliding-window')!;
  const at = (values: number[], n: number) => values[CHECKPOINTS.indexOf(n)];
  const slidingBytesPerEntry =
    (at(sliding, LISTPACK_ENTRIES) - at(sliding, 1)) / (LISTPACK_ENTRIES - 1);
  const smallKeyBytes = new Map(
    SMALL_KEY_ALGORITHMS.map((a) => [a, Math.max(...sizes.get(a)!)] as const),
  );
  const markdown = [
    '## Memory: Redis bytes per client key',
    '',
    `MEMORY USAGE … SAMPLES 0, summed over every key in the database after 1, 100 and 1000 ` +
      `requests of one client (the database is flushed before each row, so that is every key ` +
      `one decision writes). Limit ${LIMIT.threshold} per hour, so every request is allowed and ` +
      'recorded. Ours uses the key the guard builds for one route and an IPv4 client; the ' +
      'peers get the same route and client as their key, in their own layout. Key lengths in ' +
      'parentheses; longer keys cost their extra bytes.',
    '',
    table(
      [
        'limiter',
        'algorithm',
        'keys written (length)',
        'after 1',
        'after 100',
        'after 1000',
        'per entry below 128',
      ],
      rows,
    ),
    '',
    'The sliding log’s per-entry figure is (size after 127 − size after 1) / 126: up to 128 ' +
      'entries the sorted set is a listpack. @nestjs/throttler itself passes the storage a ' +
      'SHA-256 hex digest as the key, so its keys in an application are 64 characters before ' +
      'the `{…:default}:hits` wrapping.',
  ].join('\n');
  return { markdown, slidingBytesPerEntry, smallKeyBytes };
}

function subjects(): ((url: string) => Promise<Subject>)[] {
  const peer = (label: string, algorithm: string, start: (url: string) => Promise<Limiter>) => {
    return async (url: string): Promise<Subject> => {
      const limiter = await start(url);
      return {
        limiter: label,
        algorithm,
        decide: () => limiter.decide(`${ROUTE}|${TRACKER}`),
        close: () => limiter.close(),
      };
    };
  };
  return [
    ...RATE_ALGORITHMS.map((algorithm) => async (url: string): Promise<Subject> => {
      const client = new Redis(url);
      // The store sends nothing on a client that is still connecting.
      await client.ping();
      const store = new RedisStore({ client });
      const policy = resolvePolicy(
        { algorithm, period: LIMIT.periodMs / 1000, threshold: LIMIT.threshold },
        'bench',
      );
      const key = new RouteKeys(PREFIX).routeHead(ROUTE) + TRACKER + RouteKeys.tail(policy, 0);
      return {
        limiter: 'ours',
        algorithm,
        decide: () => store.consume([key], [policy], [1]),
        close: () => closeClient(client),
      };
    }),
    peer('rate-limiter-flexible', 'fixed window from first request', (url) =>
      flexibleLimiter(url, LIMIT, { prefix: PREFIX }),
    ),
    peer('@nest-lab/throttler-storage-redis', 'fixed window, block key', (url) =>
      nestLabLimiter(url, LIMIT, PREFIX),
    ),
  ];
}

/**
 * Heap per key of the memory store, by algorithm: distinct clients each make `n` requests on one
 * route, keyed as the guard keys them, and the heap (after a full GC) grows by this much per key.
 * These figures are what the store's byte estimate is made of (`memory-size.ts`); the estimate
 * the store kept is printed beside them.
 *
 *   npm run bench:heap
 */
import { type Algorithm, MemoryStore } from '../lib/index.js';
import { RouteKeys } from '../lib/keys/route-keys.js';
import { resolvePolicy } from '../lib/policy/rate-limit.policy.js';

// Just past a power of two, where the Map has just doubled its table: the most a key costs.
const KEYS = 131_100;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

function heapBytes(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed;
}

interface Case {
  readonly algorithm: Algorithm;
  /** Requests per client, each allowed and recorded. */
  readonly requests: number;
}

const CASES: readonly Case[] = [
  { algorithm: 'fixed-window', requests: 1 },
  { algorithm: 'leaky-bucket', requests: 1 },
  { algorithm: 'token-bucket', requests: 1 },
  { algorithm: 'sliding-window-counter', requests: 1 },
  { algorithm: 'sliding-window', requests: 1 },
  { algorithm: 'sliding-window', requests: 10 },
  { algorithm: 'sliding-window', requests: 100 },
  { algorithm: 'concurrency', requests: 1 },
  { algorithm: 'concurrency', requests: 10 },
];

async function measure({ algorithm, requests }: Case) {
  const keys = Math.max(2000, Math.floor(KEYS / requests));
  let nowMs = 1_700_000_000_000;
  const store = new MemoryStore({ clock: () => nowMs, maxKeys: keys + 1 });
  const policy = resolvePolicy({ algorithm, period: '1h', threshold: 1000 }, 'heap');
  const head = new RouteKeys('rate-limit').routeHead('GET /items');
  const tail = RouteKeys.tail(policy, 0);
  const policies = [policy];
  const costs = [1];
  const before = heapBytes();
  for (let r = 0; r < requests; r++) {
    for (let i = 0; i < keys; i++) {
      nowMs += 0.001;
      const tracker = `ip:10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
      await store.consume([head + tracker + tail], policies, costs);
    }
  }
  const perKey = (heapBytes() - before) / keys;
  const estimate = store.estimatedBytes / keys;
  const keyLength = (head + 'ip:10.0.0.0' + tail).length;
  await store.close();
  return { algorithm, requests, keys, keyLength, perKey, estimate };
}

console.log(
  '| algorithm | requests per key | keys | key length | heap B per key | estimate B per key |',
);
console.log('| --- | --- | --- | --- | --- | --- |');
for (const c of CASES) {
  const r = await measure(c);
  console.log(
    `| ${r.algorithm} | ${r.requests} | ${r.keys} | ${r.keyLength} | ${r.perKey.toFixed(0)} | ${r.estimate.toFixed(0)} |`,
  );
}

/**
 * Soak: a million decisions through the memory store over a rolling population of keys, with
 * the heap measured (after a full GC) before, half-way and after. Memory must stay flat: expired
 * keys are swept as decisions are made, and the key bound caps the rest.
 *
 *   npm run bench:soak
 */
import { MemoryStore } from '../lib/index.js';
import { resolvePolicy } from '../lib/policy/rate-limit.policy.js';

const DECISIONS = 1_000_000;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

function heapMb(): number {
  gc!();
  return process.memoryUsage().heapUsed / 1024 / 1024;
}

// Simulated time, so a million decisions cover many windows in a few seconds.
let nowMs = 1_700_000_000_000;
const store = new MemoryStore({ clock: () => nowMs, maxKeys: 100_000 });
const policies = [
  resolvePolicy({ period: '10s', threshold: 20 }, 'soak'),
  resolvePolicy({ period: '1m', threshold: 100, algorithm: 'leaky-bucket' }, 'soak'),
];
const costs = [1, 1];

async function phase(from: number, to: number) {
  for (let i = from; i < to; i++) {
    // 5,000 clients active at a time; the population turns over every 50,000 decisions, and
    // simulated time moves 1 ms per decision, so old clients' keys expire as new ones arrive.
    const client = (i % 5000) + Math.floor(i / 50_000) * 5000;
    nowMs += 1;
    await store.consume([`c${client}:a`, `c${client}:b`], policies, costs);
  }
}

const before = heapMb();
await phase(0, DECISIONS / 2);
const middle = heapMb();
const keysMiddle = store.size;
await phase(DECISIONS / 2, DECISIONS);
const after = heapMb();
console.log(`decisions: ${DECISIONS}`);
console.log(
  `heap MB before: ${before.toFixed(1)}, half-way: ${middle.toFixed(1)}, after: ${after.toFixed(1)}`,
);
console.log(`keys held half-way: ${keysMiddle}, at the end: ${store.size}`);

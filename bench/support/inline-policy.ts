/**
 * A policy written inline (`consume(key, { … })`, a new object on every call) against the same
 * policy hoisted into a constant. Both must cost the same: the service finds an inline literal
 * by its fields instead of by identity, and this is where that shows.
 */
import 'reflect-metadata';
import { Test } from '@nestjs/testing';
import { type RateLimitPolicy, RateLimitModule, RateLimitService } from '../../lib/index.js';
import { progress } from './bench-context.js';
import { median } from './closed-loop.js';
import { type Limit } from './limiter.js';
import { integer, ratio, table } from './markdown.js';
import { type Consume } from './our-limiter.js';

/** The limit both forms write: 1000 per 60 s. */
export const INLINE_LIMIT: Limit = { threshold: 1000, periodMs: 60_000 };

const HOISTED: RateLimitPolicy = { algorithm: 'fixed-window', period: 60, threshold: 1000 };

export const consumeHoisted: Consume = (service, key) => service.consume(key, HOISTED);

// Spelled out at the call, as application code writes it: a new object literal every call.
export const consumeInline: Consume = (service, key) =>
  service.consume(key, { algorithm: 'fixed-window', period: 60, threshold: 1000 });

/** Median ops/s of each form and the ratio, with every round's ratio. */
export interface InlineComparison {
  readonly hoisted: number;
  readonly inline: number;
  /** The median of inline / hoisted within each round. */
  readonly ratio: number;
  /** inline / hoisted within each round. */
  readonly rounds: readonly number[];
}

export function compareInline(hoisted: readonly number[], inline: readonly number[]) {
  const rounds = inline.map((v, k) => v / hoisted[k]);
  const comparison: InlineComparison = {
    hoisted: median(hoisted),
    inline: median(inline),
    // Within each round, where the machine's speed drifts least, then the median.
    ratio: median(rounds),
    rounds,
  };
  return comparison;
}

const MEMORY_KEYS = 10_000;
const MEMORY_ROUNDS = 5;
const MEMORY_WARMUP = 20_000;

/**
 * On the memory store, where nothing else hides the cost of the policy: one call at a time
 * (await, then the next), the forms alternating within each round and swapping who goes first.
 */
export async function inlineOnMemory(quick: boolean): Promise<InlineComparison> {
  const calls = quick ? 20_000 : 200_000;
  const keys = Array.from({ length: MEMORY_KEYS }, (_, k) => `user:${k}`);
  // No redis and no store: the memory store, unwrapped, as an application without Redis gets it.
  const moduleRef = await Test.createTestingModule({
    imports: [RateLimitModule.forRoot({})],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: ['error', 'warn'] });
  await app.init();
  const service = app.get(RateLimitService);
  // Both forms share every key: at most 2 × rounds × calls / keys + warm-up decisions per key,
  // well under 1000, so nothing is rejected.
  const loop = async (consume: Consume, n: number) => {
    let rejected = 0;
    const started = performance.now();
    for (let i = 0; i < n; i++) {
      if (!(await consume(service, keys[i % MEMORY_KEYS])).allowed) rejected++;
    }
    if (rejected > 0) throw new Error(`inline vs hoisted: ${rejected} rejected on memory`);
    return n / ((performance.now() - started) / 1000);
  };
  const gc = (globalThis as { gc?: () => void }).gc;
  try {
    await loop(consumeHoisted, MEMORY_WARMUP);
    await loop(consumeInline, MEMORY_WARMUP);
    const hoisted: number[] = [];
    const inline: number[] = [];
    for (let round = 0; round < MEMORY_ROUNDS; round++) {
      const forms = [
        { name: 'hoisted', consume: consumeHoisted, into: hoisted },
        { name: 'inline', consume: consumeInline, into: inline },
      ];
      if (round % 2 === 1) forms.reverse();
      for (const form of forms) {
        // Each run starts on a collected heap, so neither pays for the other's garbage.
        gc?.();
        form.into.push(await loop(form.consume, calls));
        progress(
          'decisions',
          `memory ${form.name} round ${round + 1}: ${integer(form.into[round])}/s`,
        );
      }
    }
    return compareInline(hoisted, inline);
  } finally {
    await app.close();
  }
}

/** The second table of the decisions section. */
export function renderInline(redis: InlineComparison, memory: InlineComparison, quick: boolean) {
  const row = (store: string, how: string, c: InlineComparison) => [
    store,
    how,
    integer(c.hoisted),
    integer(c.inline),
    ratio(c.ratio),
    c.rounds.map(ratio).join(' / '),
  ];
  const calls = quick ? 20_000 : 200_000;
  return [
    '### Inline vs hoisted policy',
    '',
    table(
      ['store', 'measured', 'hoisted ops/s', 'inline ops/s', 'inline / hoisted', 'per round'],
      [
        row('Redis (ioredis)', 'the two fixed-window rows above', redis),
        row('memory', `${integer(calls)} calls one at a time, ${MEMORY_ROUNDS} rounds`, memory),
      ],
    ),
    '',
    "Hoisted passes one `{ algorithm: 'fixed-window', period: 60, threshold: 1000 }` object " +
      'held in a constant; inline writes that literal in the `consume` call, so every call ' +
      'passes a new object, as code that writes the policy at the call site does. On Redis the ' +
      'two are the decisions rows above (same client library, same load, rotated with the ' +
      'others). On memory (`RateLimitModule.forRoot({})`, no Redis) a loop awaits each ' +
      `\`consume\` before the next, over ${integer(MEMORY_KEYS)} keys, after ` +
      `${integer(MEMORY_WARMUP)} warm-up calls of each form; the forms alternate within each ` +
      'round (who goes first swaps every round), with a garbage collection before each run. ' +
      'Ops/s are the medians of the rounds; "per round" is inline / hoisted within each round, and "inline / hoisted" the median of those.',
  ].join('\n');
}

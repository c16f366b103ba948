/**
 * Rows of one comparison measured side by side on the memory store, where nothing hides a small
 * cost: `RateLimitService.consume` one call at a time over the same keys, every row warmed up,
 * then rounds that run each row once in rotated order on a collected heap; per row, the median
 * ops/s of the rounds and the median of its ratio to the first row within each round.
 */
import 'reflect-metadata';
import { Test } from '@nestjs/testing';
import {
  type RateLimitModuleOptions,
  RateLimitModule,
  type RateLimitPolicy,
  RateLimitService,
} from '../../lib/index.js';
import { progress } from './bench-context.js';
import { median } from './closed-loop.js';
import { integer, ratio } from './markdown.js';

export const SIDE_BY_SIDE_KEYS = 10_000;
export const SIDE_BY_SIDE_ROUNDS = 5;
export const SIDE_BY_SIDE_WARMUP = 20_000;

/** The keys every row goes through, in this order, over and over: `user:0` … `user:9999`. */
export const SIDE_BY_SIDE_KEY_LIST: readonly string[] = Array.from(
  { length: SIDE_BY_SIDE_KEYS },
  (_, k) => `user:${k}`,
);

/** Calls per measured run. */
export const sideBySideCalls = (quick: boolean) => (quick ? 20_000 : 200_000);

/** Median ops/s per row and, per row, the median of its ratio to the first row in each round. */
export interface SideBySide<Id extends string> {
  readonly perSecond: ReadonlyMap<Id, number>;
  readonly vsBaseline: ReadonlyMap<Id, number>;
  readonly calls: number;
}

/** A Nest app with the module and `options` (the memory store unless they say otherwise). */
export async function startMemoryService(options: RateLimitModuleOptions) {
  const moduleRef = await Test.createTestingModule({
    imports: [RateLimitModule.forRoot(options)],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: ['error', 'warn'] });
  await app.init();
  return { app, service: app.get(RateLimitService) };
}

/** `n` decisions of `policy`, awaited one by one over the keys, in ops/s; none may be rejected. */
export async function consumeRate(service: RateLimitService, policy: RateLimitPolicy, n: number) {
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    const key = SIDE_BY_SIDE_KEY_LIST[i % SIDE_BY_SIDE_KEYS];
    if (!(await service.consume(key, policy)).allowed) throw new Error('rejected');
  }
  return n / ((performance.now() - started) / 1000);
}

/**
 * Runs `ids` side by side: `run(id, calls)` answers one run's ops/s; `afterRun(id)`, when given,
 * measures what else a row records after each of its measured runs. `label` names the rows in
 * the progress lines.
 */
export async function sideBySide<Id extends string>(
  label: string,
  ids: readonly Id[],
  quick: boolean,
  run: (id: Id, calls: number) => Promise<number>,
  afterRun?: (id: Id) => Promise<void>,
): Promise<SideBySide<Id>> {
  const calls = sideBySideCalls(quick);
  const gc = (globalThis as { gc?: () => void }).gc;
  const runs = new Map<Id, number[]>(ids.map((id) => [id, []]));
  for (const id of ids) await run(id, SIDE_BY_SIDE_WARMUP);
  for (let round = 0; round < SIDE_BY_SIDE_ROUNDS; round++) {
    // Rotated, so that no row always runs first or last.
    for (const id of ids.map((_, k) => ids[(k + round) % ids.length])) {
      // Each run starts on a collected heap, so that none pays for another's garbage.
      gc?.();
      const perSecond = await run(id, calls);
      runs.get(id)!.push(perSecond);
      await afterRun?.(id);
      progress('decisions', `${label} ${id} round ${round + 1}: ${integer(perSecond)}/s`);
    }
  }
  const baseline = runs.get(ids[0])!;
  return {
    calls,
    perSecond: new Map(ids.map((id) => [id, median(runs.get(id)!)])),
    // Within each round, where the machine's speed drifts least, then the median.
    vsBaseline: new Map(
      ids.map((id) => [id, median(runs.get(id)!.map((v, k) => v / baseline[k]))]),
    ),
  };
}

/** A row's measured cells: ops/s, vs the baseline row, µs per decision, µs added to the baseline's. */
export function sideBySideCells<Id extends string>(
  perSecond: ReadonlyMap<Id, number>,
  vsBaseline: ReadonlyMap<Id, number>,
  id: Id,
  baseline: Id,
): string[] {
  const us = 1e6 / perSecond.get(id)!;
  return [
    integer(perSecond.get(id)!),
    ratio(vsBaseline.get(id)!),
    us.toFixed(2),
    id === baseline ? '–' : (us - 1e6 / perSecond.get(baseline)!).toFixed(2),
  ];
}

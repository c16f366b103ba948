import { type Algorithm } from '../../lib/algorithms/algorithm.js';
import { resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import { MemoryStore } from '../../lib/stores/memory/memory.store.js';

/** What the store answered to one request. */
export interface Outcome {
  readonly atMs: number;
  readonly allowed: boolean;
}

/**
 * Sends one client's requests, in order, through a fresh memory store whose clock is set to each
 * arrival time: the same decisions on every run, and the same as the Redis store would make.
 */
export async function replay(
  algorithm: Algorithm,
  limit: { period: string; threshold: number },
  arrivalsMs: readonly number[],
): Promise<Outcome[]> {
  let nowMs = 0;
  const store = new MemoryStore({ clock: () => nowMs });
  const policy = resolvePolicy({ ...limit, algorithm }, `docs:charts ${algorithm}`);
  const outcomes: Outcome[] = [];
  for (const atMs of arrivalsMs) {
    nowMs = atMs;
    const decision = await store.consume(['chart-client'], [policy], [1]);
    outcomes.push({ atMs, allowed: decision.allowed });
  }
  await store.close();
  return outcomes;
}

/** The most requests allowed within any span of `periodMs` (open at the start, closed at the end). */
export function mostAllowedInAnyPeriod(outcomes: readonly Outcome[], periodMs: number): number {
  const allowed = outcomes.filter((o) => o.allowed).map((o) => o.atMs);
  let most = 0;
  let first = 0;
  for (let last = 0; last < allowed.length; last++) {
    while (allowed[first] <= allowed[last] - periodMs) first++;
    most = Math.max(most, last - first + 1);
  }
  return most;
}

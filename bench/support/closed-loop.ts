/**
 * A closed-loop load generator: `inFlight` workers, each sending its next decision as soon as the
 * previous one is answered, until `total` decisions are done. The offered load adapts to the
 * limiter, so the result is its capacity on this machine, not a rate we chose.
 */

export interface LoopResult {
  readonly decisions: number;
  readonly seconds: number;
  readonly perSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly allowed: number;
  readonly rejected: number;
}

/** Decides request number `i`; resolves to whether it was allowed. */
export type Decide = (i: number) => Promise<boolean>;

export async function runClosedLoop(total: number, inFlight: number, decide: Decide) {
  // Preallocated so that recording a latency never allocates during the run.
  const latencies = new Float64Array(total);
  let next = 0;
  let allowed = 0;
  const worker = async () => {
    while (next < total) {
      const i = next++;
      const started = performance.now();
      if (await decide(i)) allowed++;
      latencies[i] = performance.now() - started;
      // Answers that need no I/O (a local block, a fallback) would otherwise chain in microtasks
      // and starve the event loop: no timer, socket or breaker probe would run until the loop
      // ends. A server reads each request from a socket; once per round of the workers will do.
      if (i % inFlight === inFlight - 1) await new Promise((resolve) => setImmediate(resolve));
    }
  };
  const begin = performance.now();
  await Promise.all(Array.from({ length: Math.min(inFlight, total) }, worker));
  const seconds = (performance.now() - begin) / 1000;
  latencies.sort();
  const result: LoopResult = {
    decisions: total,
    seconds,
    perSecond: total / seconds,
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    allowed,
    rejected: total - allowed,
  };
  return result;
}

/** Nearest rank on sorted values. */
function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** The middle result by throughput: one slow or lucky round does not decide the row. */
export function medianByThroughput<T extends LoopResult>(results: readonly T[]): T {
  const sorted = [...results].sort((a, b) => a.perSecond - b.perSecond);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

/** The middle value; for an even count, the mean of the two middle ones. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

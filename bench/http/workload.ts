/** The one workload every HTTP configuration runs, so the rows differ only in the limiter. */

export const ADAPTERS = ['express', 'fastify'] as const;
export type Adapter = (typeof ADAPTERS)[number];

export const CONFIGS = [
  'no limiter',
  'ours (Redis)',
  'ours (memory)',
  '@nestjs/throttler (memory)',
  '@nestjs/throttler + @nest-lab Redis',
] as const;
export type Config = (typeof CONFIGS)[number];

export const ROUTE_PATH = '/bench/ping';
export const CLIENT_HEADER = 'x-client-id';
export const CLIENT_IDS = 1000;
export const CONNECTIONS = 64;

// One period of 1 s keeps each sliding-window log at a few dozen entries (a client gets
// roughly reqPerSec / CLIENT_IDS requests a second), and a threshold of a million per second
// is far beyond any client here, so every limiter decides "allowed" and none rejects.
export const LIMIT_PERIOD_MS = 1000;
export const LIMIT_THRESHOLD = 1_000_000;

export interface Durations {
  readonly warmupSeconds: number;
  readonly measureSeconds: number;
  /** Passes over every adapter x config; the second runs in reverse order (see run.ts). */
  readonly rounds: number;
}

export const FULL_RUN: Durations = { warmupSeconds: 2, measureSeconds: 8, rounds: 2 };
export const QUICK_RUN: Durations = { warmupSeconds: 1, measureSeconds: 2, rounds: 1 };

const limit = `${LIMIT_THRESHOLD.toLocaleString('en-US')} per ${LIMIT_PERIOD_MS / 1000} s`;

export const HTTP_WORKLOAD_NOTE =
  `HTTP: autocannon, ${CONNECTIONS} connections, GET ${ROUTE_PATH} answering tiny JSON, ` +
  `the Nest app in its own process with its logger off. Every request carries an ` +
  `${CLIENT_HEADER} header cycling over ${CLIENT_IDS} ids, every limiter tracks by it, ` +
  `each with its default algorithm and the same limit (${limit}: nothing is rejected). ` +
  `Per row ${FULL_RUN.warmupSeconds} s warm-up + ${FULL_RUN.measureSeconds} s measured; ` +
  `the whole set runs twice, the second time in reverse order, and each row keeps its faster ` +
  `run (--quick: ${QUICK_RUN.warmupSeconds} s + ${QUICK_RUN.measureSeconds} s, once). ` +
  `Latency percentiles over every response; non-2xx also counts connection errors, ` +
  `summed over all runs of the row including warm-ups, and must be 0.`;

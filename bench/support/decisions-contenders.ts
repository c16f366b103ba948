/**
 * Who the decisions section measures: every contender on ioredis, and the floor, ours and
 * rate-limiter-flexible again on node-redis, so each library's rows are compared with the floor
 * and the peer on that same library.
 */
import { type Algorithm, type RateAlgorithm } from '../../lib/index.js';
import { RATE_ALGORITHMS } from '../../lib/algorithms/registry.js';
import { floorLimiter, nodeRedisFloorLimiter } from './floor-limiter.js';
import { consumeInline, INLINE_LIMIT } from './inline-policy.js';
import { type Library, type Limit, type Limiter } from './limiter.js';
import { ourLimiter } from './our-limiter.js';
import { flexibleLimiter, nestLabLimiter, nodeRedisFlexibleLimiter } from './peer-limiters.js';

// Far above the ~12 decisions a key gets per round, so every contender allows everything.
export const LIMIT: Limit = { threshold: 1000, periodMs: 60_000 };
if (LIMIT.threshold !== INLINE_LIMIT.threshold || LIMIT.periodMs !== INLINE_LIMIT.periodMs) {
  throw new Error('the inline-policy row must write the limit every other row uses');
}

/** A contender that runs on both libraries; its ioredis id has no suffix. */
export type SharedId = 'floor' | 'flexible' | `ours:${RateAlgorithm}`;

export type DecisionsId =
  | SharedId
  | `${SharedId}:node-redis`
  | `ours:${Algorithm}`
  | 'ours:auto-pipelining'
  | 'ours:fixed-window:inline'
  | 'nest-lab';

/** The id of `id` on `library`. */
export const onLibrary = (id: SharedId, library: Library): DecisionsId =>
  library === 'ioredis' ? id : `${id}:node-redis`;

export interface Contender {
  readonly id: DecisionsId;
  readonly label: string;
  readonly library: Library;
  /** The floor and rate-limiter-flexible rows this row is compared with: same library. */
  readonly floor: DecisionsId;
  readonly flexible: DecisionsId;
  readonly start: (url: string) => Promise<Limiter>;
}

const ourPolicy = (algorithm: Algorithm) => ({
  algorithm,
  period: LIMIT.periodMs / 1000,
  threshold: LIMIT.threshold,
});

function onEach(
  library: Library,
  rows: readonly Omit<Contender, 'library' | 'floor' | 'flexible'>[],
): Contender[] {
  const floor = onLibrary('floor', library);
  const flexible = onLibrary('flexible', library);
  return rows.map((row) => ({ ...row, library, floor, flexible }));
}

/** The rows both libraries have, each with its own client and key prefix. */
function shared(library: Library): Contender[] {
  const tag = library === 'ioredis' ? '' : '-nr';
  return onEach(library, [
    {
      id: onLibrary('floor', library),
      label: 'floor: minimal 4-call sorted-set script',
      start: (url) =>
        library === 'ioredis'
          ? floorLimiter(url, 'floor', LIMIT)
          : nodeRedisFloorLimiter(url, 'floor-nr', LIMIT),
    },
    ...RATE_ALGORITHMS.map((algorithm) => ({
      id: onLibrary(`ours:${algorithm}`, library),
      label: `ours ${algorithm}`,
      start: (url: string) =>
        ourLimiter(url, {
          prefix: `ours-${algorithm}${tag}`,
          library,
          policy: ourPolicy(algorithm),
        }),
    })),
  ]);
}

export const CONTENDERS: readonly Contender[] = [
  ...shared('ioredis'),
  ...onEach('ioredis', [
    {
      id: 'ours:fixed-window:inline',
      label: 'ours fixed-window, policy written inline',
      // As long as the hoisted row's prefix, so their keys are the same size.
      start: (url) => ourLimiter(url, { prefix: 'ours-fixed-inline', consume: consumeInline }),
    },
    {
      id: 'ours:auto-pipelining',
      label: 'ours sliding-window, client with enableAutoPipelining',
      start: (url) =>
        ourLimiter(url, {
          prefix: 'ours-autopipe',
          policy: ourPolicy('sliding-window'),
          clientOptions: { enableAutoPipelining: true },
        }),
    },
    {
      id: 'flexible',
      label: 'rate-limiter-flexible RateLimiterRedis',
      start: (url) => flexibleLimiter(url, LIMIT, { prefix: 'rlflx' }),
    },
    {
      id: 'nest-lab',
      label: '@nest-lab/throttler-storage-redis',
      start: (url) => nestLabLimiter(url, LIMIT, 'nestlab'),
    },
  ]),
  ...shared('node-redis'),
  ...onEach('node-redis', [
    {
      id: 'flexible:node-redis',
      label: 'rate-limiter-flexible RateLimiterRedis, useRedisPackage',
      start: (url) => nodeRedisFlexibleLimiter(url, LIMIT, { prefix: 'rlflx-nr' }),
    },
  ]),
];

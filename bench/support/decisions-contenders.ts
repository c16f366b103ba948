/**
 * Who the decisions section measures: every contender on ioredis, and the floor, ours and
 * rate-limiter-flexible again on node-redis, so each library's rows are compared with the floor
 * and the peer on that same library.
 */
import { type Algorithm } from '../../lib/index.js';
import { type RateAlgorithm } from '../../lib/algorithms/algorithm.js';
import { RATE_ALGORITHMS } from '../../lib/algorithms/registry.js';
import { floorLimiter, nodeRedisFloorLimiter } from './floor-limiter.js';
import { consumeInline, INLINE_LIMIT } from './inline-policy.js';
import { type Library, type Limit, type Limiter } from './limiter.js';
import { ourLimiter } from './our-limiter.js';
import { flexibleLimiter, nestLabLimiter, nodeRedisFlexibleLimiter } from './peer-limiters.js';
import {
  type ValkeyLibrary,
  valkeyFlexibleLimiter,
  valkeyFloorLimiter,
} from './valkey-limiters.js';

// Far above the ~12 decisions a key gets per round, so every contender allows everything.
export const LIMIT: Limit = { threshold: 1000, periodMs: 60_000 };
if (LIMIT.threshold !== INLINE_LIMIT.threshold || LIMIT.periodMs !== INLINE_LIMIT.periodMs) {
  throw new Error('the inline-policy row must write the limit every other row uses');
}

export const FLOOR_LABEL = 'floor: minimal 4-call sorted-set script';

/** A contender that runs on both libraries; its ioredis id has no suffix. */
export type SharedId = 'floor' | 'flexible' | `ours:${RateAlgorithm}`;

/** A row on the private valkey-server: ioredis for the server's ratio, iovalkey, GLIDE. */
export type ValkeyId =
  | 'floor@valkey'
  | 'ours:sliding-window@valkey'
  | `${'floor' | 'flexible' | 'ours:sliding-window'}:${ValkeyLibrary}`;

export type DecisionsId =
  | SharedId
  | `${SharedId}:node-redis`
  | `ours:${Algorithm}`
  | `ours:${BatchedAlgorithm}:one-by-one`
  | 'ours:auto-pipelining'
  | 'ours:fixed-window:inline'
  | 'nest-lab'
  | ValkeyId;

/** The algorithms whose rows are measured again with each decision as its own call. */
export const BATCHED_ALGORITHMS = ['fixed-window', 'leaky-bucket', 'token-bucket'] as const;
export type BatchedAlgorithm = (typeof BATCHED_ALGORITHMS)[number];

/** The server a row runs on. */
export type ServerName = 'redis' | 'valkey';

/** The id of `id` on `library`. */
export const onLibrary = (id: SharedId, library: Library): DecisionsId =>
  library === 'ioredis' ? id : `${id}:node-redis`;

export interface Contender {
  readonly id: DecisionsId;
  readonly label: string;
  readonly library: Library;
  readonly server: ServerName;
  /**
   * The floor and rate-limiter-flexible rows this row is compared with: same library, same
   * server. ioredis on Valkey has no rate-limiter-flexible row of its own.
   */
  readonly floor: DecisionsId;
  readonly flexible?: DecisionsId;
  readonly start: (url: string) => Promise<Limiter>;
}

const ourPolicy = (algorithm: Algorithm) => ({
  algorithm,
  period: LIMIT.periodMs / 1000,
  threshold: LIMIT.threshold,
});

type Row = Omit<Contender, 'library' | 'server' | 'floor' | 'flexible'>;

function onEach(library: Library, rows: readonly Row[]): Contender[] {
  const floor = onLibrary('floor', library);
  const flexible = onLibrary('flexible', library);
  return rows.map((row) => ({ ...row, library, server: 'redis', floor, flexible }));
}

/** The rows both libraries have, each with its own client and key prefix. */
function shared(library: Library): Contender[] {
  const tag = library === 'ioredis' ? '' : '-nr';
  return onEach(library, [
    {
      id: onLibrary('floor', library),
      label: FLOOR_LABEL,
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
    ...BATCHED_ALGORITHMS.map((algorithm) => ({
      id: `ours:${algorithm}:one-by-one` as const,
      label: `ours ${algorithm}, batchSize: 1 (each decision its own call)`,
      start: (url: string) =>
        ourLimiter(url, {
          prefix: `ours-${algorithm}-1`,
          policy: ourPolicy(algorithm),
          batchSize: 1,
        }),
    })),
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

/** The rows of a Valkey client: the floor, ours (sliding window) and rate-limiter-flexible. */
function onValkeyClient(library: ValkeyLibrary): Contender[] {
  const floor: ValkeyId = `floor:${library}`;
  const flexible: ValkeyId = `flexible:${library}`;
  const row = (id: ValkeyId, label: string, start: Contender['start']): Contender => ({
    id,
    label,
    library,
    server: 'valkey',
    floor,
    flexible,
    start,
  });
  const peer = library === 'glide' ? 'RateLimiterValkeyGlide' : 'RateLimiterValkey';
  return [
    row(floor, FLOOR_LABEL, (url) => valkeyFloorLimiter(library, url, `floor-${library}`, LIMIT)),
    row(`ours:sliding-window:${library}`, 'ours sliding-window', (url) =>
      ourLimiter(url, {
        prefix: `ours-sliding-window-${library}`,
        library,
        policy: ourPolicy('sliding-window'),
      }),
    ),
    row(flexible, `rate-limiter-flexible ${peer}`, (url) =>
      valkeyFlexibleLimiter(library, url, LIMIT, `rlflx-${library}`),
    ),
  ];
}

/**
 * The rows on the private valkey-server: the floor and ours on ioredis, which set against the
 * same rows on Redis give the one server's speed against the other's, then each Valkey client.
 */
export const VALKEY_CONTENDERS: readonly Contender[] = [
  {
    id: 'floor@valkey',
    label: FLOOR_LABEL,
    library: 'ioredis',
    server: 'valkey',
    floor: 'floor@valkey',
    start: (url) => floorLimiter(url, 'floor', LIMIT),
  },
  {
    id: 'ours:sliding-window@valkey',
    label: 'ours sliding-window',
    library: 'ioredis',
    server: 'valkey',
    floor: 'floor@valkey',
    start: (url) =>
      ourLimiter(url, { prefix: 'ours-sliding-window', policy: ourPolicy('sliding-window') }),
  },
  ...onValkeyClient('iovalkey'),
  ...onValkeyClient('glide'),
];

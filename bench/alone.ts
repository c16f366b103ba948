/**
 * One decision at a time: what each decision costs Redis when it goes alone, as it does at low
 * concurrency and on a Cluster, where a batch holds one slot. Measured inside Redis (INFO
 * commandstats of the script calls, and INFO cpu), so the client and the network stay out of it.
 */
import { type BenchContext, progress } from './support/bench-context.js';
import { median } from './support/closed-loop.js';
import { FLOOR_LABEL, LIMIT } from './support/decisions-contenders.js';
import { floorLimiter } from './support/floor-limiter.js';
import { type Limiter } from './support/limiter.js';
import { fixed, ratio, table } from './support/markdown.js';
import { ourLimiter } from './support/our-limiter.js';
import { flexibleLimiter } from './support/peer-limiters.js';
import { PROBES, type ProbeId } from './support/probe-limiters.js';
import { counterDelta, serverCounters } from './support/redis-stats.js';

const KEYS = 1_000;
const DECISIONS = 5_000;
const ROUNDS = 5;

export type AloneId =
  | 'floor'
  | 'flexible'
  | 'fixed-window'
  | 'leaky-bucket'
  | 'token-bucket'
  | 'sliding-window'
  | ProbeId;

interface AloneContender {
  readonly id: AloneId;
  readonly label: string;
  /** What it is held to: rate-limiter-flexible, or the floor for a log. */
  readonly against: 'flexible' | 'floor' | undefined;
  readonly start: (url: string) => Promise<Limiter>;
  /** A step of the profile (see probe-limiters.ts), not a limiter: shown in a table of its own. */
  readonly probe?: true;
}

const ours = (
  algorithm: 'fixed-window' | 'leaky-bucket' | 'token-bucket' | 'sliding-window',
): AloneContender => ({
  id: algorithm,
  label: `ours ${algorithm}`,
  against: algorithm === 'sliding-window' ? 'floor' : 'flexible',
  start: (url) =>
    ourLimiter(url, {
      prefix: `alone-${algorithm}`,
      policy: { algorithm, period: LIMIT.periodMs / 1000, threshold: LIMIT.threshold },
    }),
});

const CONTENDERS: readonly AloneContender[] = [
  {
    id: 'flexible',
    label: 'rate-limiter-flexible RateLimiterRedis',
    against: undefined,
    start: (url) => flexibleLimiter(url, LIMIT, { prefix: 'alone-flexible' }),
  },
  {
    id: 'floor',
    label: FLOOR_LABEL,
    against: undefined,
    start: (url) => floorLimiter(url, 'alone-floor', LIMIT),
  },
  ours('fixed-window'),
  ours('leaky-bucket'),
  ours('token-bucket'),
  ours('sliding-window'),
  ...PROBES.map((probe) => ({ ...probe, against: 'flexible' as const, probe: true as const })),
];

interface Sample {
  /** µs inside the script or function, per decision. */
  readonly scriptUs: number;
  /** µs of Redis CPU per decision, parsing and I/O included. */
  readonly cpuUs: number;
}

export interface AloneResult {
  readonly markdown: string;
  /** Median over rounds of `id`'s script time over what it is held to, within each round. */
  readonly ratio: (id: AloneId) => number;
}

export async function runAlone(ctx: BenchContext): Promise<AloneResult> {
  const decisions = ctx.quick ? DECISIONS / 10 : DECISIONS;
  const rounds = ctx.quick ? 1 : ROUNDS;
  const samples = new Map<AloneId, Sample[]>(CONTENDERS.map((c) => [c.id, []]));
  for (let round = 0; round < rounds; round++) {
    await ctx.admin.flushall();
    // Rotated, so that no contender always runs first.
    for (let i = 0; i < CONTENDERS.length; i++) {
      const contender = CONTENDERS[(i + round) % CONTENDERS.length];
      progress('alone', `round ${round + 1}/${rounds}: ${contender.label}`);
      samples.get(contender.id)!.push(await measure(ctx, contender, decisions));
    }
  }
  const ratioOf = (id: AloneId): number => {
    const against = CONTENDERS.find((c) => c.id === id)!.against;
    if (against === undefined) return 1;
    const own = samples.get(id)!;
    const theirs = samples.get(against)!;
    return median(own.map((s, round) => s.scriptUs / theirs[round].scriptUs));
  };
  const row = (c: AloneContender) => {
    const own = samples.get(c.id)!;
    const cpuAgainst = c.against && samples.get(c.against)!;
    return [
      c.label,
      fixed(median(own.map((s) => s.scriptUs)), 2),
      own.map((s) => fixed(s.scriptUs, 2)).join(' / '),
      fixed(median(own.map((s) => s.cpuUs)), 2),
      c.against === undefined
        ? '–'
        : `${ratio(ratioOf(c.id))} ${c.against === 'floor' ? 'floor' : 'rlf'}`,
      cpuAgainst ? ratio(median(own.map((s, round) => s.cpuUs / cpuAgainst[round].cpuUs))) : '–',
    ];
  };
  const columns = ['contender', 'script µs', 'rounds', 'Redis CPU µs', 'script vs', 'CPU vs'];
  const markdown = [
    '## One decision at a time: Redis time per decision',
    '',
    `${decisions.toLocaleString('en-US')} decisions, one in flight, over ${KEYS.toLocaleString('en-US')} keys warmed by one decision each, limit ${LIMIT.threshold} per ${LIMIT.periodMs / 1000} s, so nothing is rejected; ${rounds} round${rounds === 1 ? '' : 's'}, every contender once per round in rotated order, FLUSHALL between rounds, each on its own ioredis client. "script µs" is the time inside EVALSHA or FCALL per decision (INFO commandstats), "Redis CPU µs" all of redis-server's CPU per decision (INFO cpu: parsing, I/O and expiry included). The ratios are medians of the ratios within each round: the fixed window, leaky bucket and token bucket against rate-limiter-flexible (one EVALSHA of SET NX, INCRBY and PTTL), the sliding log against the floor, a minimal 4-call sorted-set script. Ours goes through \`RateLimitService.consume\` on a Nest app, as in the decisions section.`,
    '',
    table(columns, CONTENDERS.filter((c) => !c.probe).map(row)),
    '',
    "Where a lone decision's time goes: probes that do a part of a fixed-window decision and nothing else, measured in the same rounds (bench/support/probe-limiters.ts). Every probe is sent the same keys and arguments (the counter, an id key and the id), so that an EVALSHA and an FCALL differ only in how they run; each FCALL probe adds one step to the one above it, and the last two are the two ways to keep a decision's id.",
    '',
    table(columns, CONTENDERS.filter((c) => c.probe).map(row)),
  ].join('\n');
  return { markdown, ratio: ratioOf };
}

async function measure(
  ctx: BenchContext,
  contender: AloneContender,
  decisions: number,
): Promise<Sample> {
  const limiter = await contender.start(ctx.redisUrl);
  try {
    const keys = Array.from({ length: KEYS }, (_, i) => `k${i}`);
    for (const key of keys) await limiter.decide(key);
    const before = await serverCounters(ctx.admin);
    for (let i = 0; i < decisions; i++) await limiter.decide(keys[i % KEYS]);
    const after = counterDelta(before, await serverCounters(ctx.admin));
    if (limiter.degraded() > 0) throw new Error(`${contender.label}: answered by the fallback`);
    return { scriptUs: after.scriptMicros / decisions, cpuUs: after.cpuMicros / decisions };
  } finally {
    await limiter.close();
  }
}

/**
 * Flood: one abusive client sends most of the traffic, far over its limit, while a thousand
 * normal clients stay within theirs. What matters is how much of the flood still reaches Redis.
 */
import { type Algorithm } from '../lib/index.js';
import { type BenchContext, progress } from './support/bench-context.js';
import { runClosedLoop } from './support/closed-loop.js';
import { countKeyCalls } from './support/key-call-counter.js';
import { ioredisClient, type Limit, type Limiter } from './support/limiter.js';
import { fixed, integer, ms, table } from './support/markdown.js';
import { type MeasuredRun, measuredRun } from './support/measured-run.js';
import { ourLimiter } from './support/our-limiter.js';
import { flexibleLimiter, nestLabLimiter } from './support/peer-limiters.js';

const IN_FLIGHT = 256;
const ABUSIVE_KEY = 'ip:203.0.113.7';
const NORMAL_KEYS = 1000;
/** Every tenth decision is a normal client's, the other nine the abusive client's. */
const NORMAL_EVERY = 10;
const LIMIT: Limit = { threshold: 100, periodMs: 1000 };
// The buckets let one request through per drained slot: in a steady flood the wait is one slot.
const BUCKET_SLOT_MS = LIMIT.periodMs / LIMIT.threshold;

export type FloodId = `ours:${Algorithm}` | 'flexible' | 'flexible:in-memory-block' | 'nest-lab';

/** How long a rejected client waits before a request can pass again, in a steady flood. */
interface RetryWindow {
  readonly ms: number;
  /** Windows on multiples of the period since the epoch, rather than from a first request. */
  readonly clockAligned: boolean;
}

interface Contender {
  readonly id: FloodId;
  readonly label: string;
  readonly window: RetryWindow;
  readonly start: (url: string) => Promise<Limiter>;
}

const PERIOD_WINDOW: RetryWindow = { ms: LIMIT.periodMs, clockAligned: false };

const ourContender = (algorithm: Algorithm): Contender => ({
  id: `ours:${algorithm}`,
  label: `ours ${algorithm}`,
  // The sliding counter, once a previous window weighs in, lets requests through one at a time
  // as that weight decays: like the buckets, one per slot.
  window:
    algorithm.endsWith('bucket') || algorithm === 'sliding-window-counter'
      ? { ms: BUCKET_SLOT_MS, clockAligned: false }
      : { ms: LIMIT.periodMs, clockAligned: algorithm !== 'sliding-window' },
  start: (url) =>
    ourLimiter(url, {
      prefix: `flood-${algorithm}`,
      policy: { algorithm, period: LIMIT.periodMs / 1000, threshold: LIMIT.threshold },
    }),
});

const CONTENDERS: readonly Contender[] = [
  ourContender('sliding-window'),
  ourContender('leaky-bucket'),
  ourContender('fixed-window'),
  ourContender('token-bucket'),
  ourContender('sliding-window-counter'),
  {
    id: 'flexible',
    label: 'rate-limiter-flexible',
    window: PERIOD_WINDOW,
    start: (url) => flexibleLimiter(url, LIMIT, { prefix: 'rlflx' }),
  },
  {
    id: 'flexible:in-memory-block',
    label: `rate-limiter-flexible, inMemoryBlockOnConsumed: ${LIMIT.threshold}`,
    window: PERIOD_WINDOW,
    start: (url) =>
      flexibleLimiter(url, LIMIT, {
        prefix: 'rlflx-block',
        inMemoryBlockOnConsumed: LIMIT.threshold,
      }),
  },
  {
    id: 'nest-lab',
    label: '@nest-lab/throttler-storage-redis',
    window: PERIOD_WINDOW,
    start: (url) => nestLabLimiter(url, LIMIT, 'nestlab'),
  },
];

export interface FloodRow {
  readonly id: FloodId;
  readonly perSecond: number;
  /**
   * Calls to Redis about the abusive key once its first rejection was back, past the ones that
   * were let through, per window.
   */
  readonly extraCallsPerWindow: number;
}

export interface FloodResult {
  readonly markdown: string;
  readonly rows: readonly FloodRow[];
}

interface Flooded {
  readonly run: MeasuredRun;
  readonly abusiveAllowed: number;
  readonly abusive: number;
  readonly normalRejected: number;
  readonly degraded: number;
  /** Commands the contender's client sent about the abusive key, and the arguments that matched. */
  readonly calls: number;
  /** Of those, the ones sent before the abusive key's first rejection came back. */
  readonly openingCalls: number;
  /** Abusive requests let through after that point. */
  readonly laterAllowed: number;
  readonly matched: string[];
}

export async function runFlood(ctx: BenchContext): Promise<FloodResult> {
  // Long enough that the fastest contenders span a few one-second windows.
  const total = ctx.quick ? 10_000 : 300_000;
  const warmup = ctx.quick ? 200 : 2000;
  const rows: FloodRow[] = [];
  const answers: string[][] = [];
  const load: string[][] = [];
  const forms: string[] = [];
  for (const c of CONTENDERS) {
    const f = await floodOne(ctx, c, total, warmup);
    const windows = windowsTouched(f.run, c.window);
    const extra = f.calls - f.abusiveAllowed;
    const steadyExtra = f.calls - f.openingCalls - f.laterAllowed;
    rows.push({ id: c.id, perSecond: f.run.perSecond, extraCallsPerWindow: steadyExtra / windows });
    const rejected = f.abusive - f.abusiveAllowed;
    answers.push([
      c.label,
      integer(f.run.perSecond),
      ms(f.run.p50Ms),
      ms(f.run.p99Ms),
      `${integer(f.abusiveAllowed)} / ${integer(rejected)}`,
      integer(f.normalRejected),
      integer(f.degraded),
    ]);
    load.push([
      c.label,
      integer(f.run.server.commands / f.run.seconds),
      integer(f.run.server.scripts / f.run.seconds),
      integer(f.calls),
      `${fixed((100 * extra) / rejected)} %`,
      `${c.window.ms} ms${c.window.clockAligned ? ', on the clock' : ''}`,
      integer(windows),
      integer(f.openingCalls),
      fixed(steadyExtra / windows),
    ]);
    forms.push(`- ${c.label}: ${f.matched.map((k) => `\`${k}\``).join(', ') || '(none)'}`);
    progress('flood', `${c.label}: ${integer(f.run.perSecond)}/s, ${integer(f.calls)} key calls`);
  }
  return { markdown: render(total, warmup, answers, load, forms), rows };
}

async function floodOne(ctx: BenchContext, c: Contender, total: number, warmup: number) {
  const normalKeys = Array.from({ length: NORMAL_KEYS }, (_, k) => `ip:10.0.${k >> 8}.${k & 255}`);
  const limiter = await c.start(ctx.redisUrl);
  try {
    // Warmed on other keys, so the flood starts on a fresh abusive key.
    await runClosedLoop(warmup, IN_FLIGHT, (i) => limiter.decide(`warm-${normalKeys[i % 1000]}`));
    await ctx.admin.flushall();
    const degradedBefore = limiter.degraded();
    const counter = countKeyCalls(ioredisClient(limiter), limiter.redisKeyMarker(ABUSIVE_KEY));
    let abusive = 0;
    let abusiveAllowed = 0;
    let normalRejected = 0;
    let openingCalls: number | undefined;
    let laterAllowed = 0;
    const run = await measuredRun(ctx.admin, total, IN_FLIGHT, async (i) => {
      const normal = i % NORMAL_EVERY === 0;
      const allowed = await limiter.decide(
        normal ? normalKeys[(i / NORMAL_EVERY) % NORMAL_KEYS] : ABUSIVE_KEY,
      );
      if (normal && !allowed) normalRejected++;
      if (!normal) abusive++;
      if (!normal && allowed) abusiveAllowed++;
      if (!normal && allowed && openingCalls !== undefined) laterAllowed++;
      if (!normal && !allowed) openingCalls ??= counter.calls();
      return allowed;
    });
    counter.restore();
    const flooded: Flooded = {
      run,
      abusive,
      abusiveAllowed,
      normalRejected,
      degraded: limiter.degraded() - degradedBefore,
      calls: counter.calls(),
      openingCalls: openingCalls ?? counter.calls(),
      laterAllowed,
      matched: counter.matched(),
    };
    return flooded;
  } finally {
    await limiter.close();
  }
}

/** Retry windows the run overlapped, counting a window it only began or only ended in. */
function windowsTouched(run: MeasuredRun, window: RetryWindow): number {
  if (!window.clockAligned) return Math.max(1, Math.ceil((run.seconds * 1000) / window.ms));
  return Math.floor(run.endedAtMs / window.ms) - Math.floor(run.startedAtMs / window.ms) + 1;
}

function render(
  total: number,
  warmup: number,
  answers: string[][],
  load: string[][],
  forms: string[],
): string {
  return [
    '## Flood: one abusive key among normal ones',
    '',
    `${integer(total)} decisions, ${IN_FLIGHT} in flight (closed loop). ` +
      `${NORMAL_EVERY - 1} of every ${NORMAL_EVERY} go to one abusive key (\`${ABUSIVE_KEY}\`), ` +
      `the rest round-robin over ${integer(NORMAL_KEYS)} normal keys. Every contender has the ` +
      `same limit, ${LIMIT.threshold} per ${LIMIT.periodMs / 1000} s, so the abusive key asks ` +
      'for far more than 10× its limit and each normal key stays well within it. Each contender ' +
      `runs once, after ${integer(warmup)} warm-up decisions on other keys and a FLUSHALL; ours ` +
      'runs with the module’s defaults (block cache on). Degraded: decisions of the run that ' +
      'our fallback answered because Redis was late (must be 0).',
    '',
    table(
      [
        'contender',
        'decisions/s',
        'p50 ms',
        'p99 ms',
        'abusive allowed / rejected',
        'normal rejected',
        'degraded',
      ],
      answers,
    ),
    '',
    table(
      [
        'contender',
        'Redis commands/s',
        'scripts/s',
        'abusive-key calls',
        'rejections Redis answered',
        'retry window',
        'windows',
        'opening burst calls',
        'later calls past the allowed, per window',
      ],
      load,
    ),
    '',
    'Redis commands/s is the rise of INFO commandstats over the run, commands inside scripts ' +
      'included; scripts/s counts EVAL, EVALSHA and FCALL alone (one per call, which for ours ' +
      'may be a batch of decisions). Abusive-key calls are the decisions on the abusive key the ' +
      'contender’s own client sent: the arguments naming that key (id keys aside) in the ' +
      'commands it sent, counted by wrapping its `sendCommand`, so that a batch counts each of ' +
      'its decisions; "past ' +
      'the allowed" subtracts the abusive requests that were let through, which reach Redis in ' +
      'any design, and "rejections Redis answered" is that number over all the abusive key’s ' +
      'rejections. ' +
      'The retry window is nominal, not observed: one period for the window algorithms and the ' +
      `peers (whose windows and blocks last one period), one slot (${BUCKET_SLOT_MS} ms) for ` +
      'the buckets and the sliding counter, which in a steady flood let one request through per ' +
      'slot (the counter once its previous window weighs in). Windows counts ' +
      'those the run overlapped, a begun one included; for clock-aligned windows, by the wall ' +
      'clock. The opening burst is every call sent before the abusive key’s first rejection ' +
      'came back: with 256 decisions in flight, most of them the abusive key’s, about 230 ' +
      'are out before any answer, in any design, once per key rather than per window. The ' +
      'target, at most 1 call past the allowed per window per instance (this process is one ' +
      'instance), is checked on the calls after it. The arguments that matched:',
    '',
    ...forms,
  ].join('\n');
}

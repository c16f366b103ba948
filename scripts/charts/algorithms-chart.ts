import { type Algorithm } from '../../lib/algorithms/algorithm.js';
import { type Frame, timeAxis, timeMarks, valueGrid, xOf, yOf } from './frame.js';
import { LIMIT, LIMIT_PERIOD_MS, TRICKLE_AND_BURSTS } from './patterns.js';
import { mostAllowedInAnyPeriod, type Outcome } from './replay.js';
import { COLORS, legendEntry, num, rect, svgDocument, text } from './svg.js';

const WIDTH = 960;
const LEFT = 60;
const HEADER = 104;
const PANEL = 150;
const PLOT_HEIGHT = 100;
const BUCKET_MS = 100;

/** One panel per algorithm: requests per 100 ms, allowed stacked under rejected. */
export function algorithmsChart(runs: ReadonlyMap<Algorithm, readonly Outcome[]>): string {
  const { durationMs, burstSize, burstSeconds, trickleEveryMs } = TRICKLE_AND_BURSTS;
  const height = HEADER + runs.size * PANEL + 8;
  const perSecond = 1000 / trickleEveryMs;
  const bursts = `${burstSeconds.slice(0, -1).join(' s, ')} s and ${burstSeconds.at(-1)} s`;
  const n = LIMIT.threshold;
  const title = 'The same traffic through each algorithm';
  const setup =
    `One client, limited to ${n} requests per second (the buckets hold ${n}), sends ` +
    `${perSecond} requests a second, and bursts of ${burstSize} within ${burstSize} ms at ${bursts}.`;
  const bars = 'Each bar counts the requests of 100 ms.';
  const yMax = Math.ceil(Math.max(...[...runs.values()].map(busiestBucket)) / 10) * 10;
  const body = [
    text(LEFT, 28, title, { 'font-size': 18, 'font-weight': 'bold' }),
    text(LEFT, 48, setup, { fill: COLORS.muted }),
    text(LEFT, 66, `${bars} Vertical lines mark whole seconds, where fixed windows start.`, {
      fill: COLORS.muted,
    }),
    legendEntry(LEFT, 90, COLORS.allowed, 'allowed'),
    legendEntry(LEFT + 90, 90, COLORS.rejected, 'rejected'),
  ];
  let top = HEADER;
  for (const [algorithm, outcomes] of runs) {
    const frame: Frame = {
      left: LEFT,
      top: top + 24,
      width: WIDTH - LEFT - 30,
      height: PLOT_HEIGHT,
      fromMs: 0,
      toMs: durationMs,
      yMax,
    };
    body.push(...panel(frame, algorithm, outcomes));
    top += PANEL;
  }
  return svgDocument(WIDTH, height, title, `${setup} ${bars}`, body);
}

function panel(frame: Frame, algorithm: Algorithm, outcomes: readonly Outcome[]) {
  const allowed = outcomes.filter((o) => o.allowed).length;
  const most = mostAllowedInAnyPeriod(outcomes, LIMIT_PERIOD_MS);
  const seconds = Array.from({ length: frame.toMs / 1000 + 1 }, (_, i) => i * 1000);
  const parts = [
    text(frame.left, frame.top - 8, algorithm, { 'font-weight': 'bold' }),
    text(
      frame.left + frame.width,
      frame.top - 8,
      `allowed ${allowed}, rejected ${outcomes.length - allowed}; most allowed in any 1 s: ${most}`,
      { 'text-anchor': 'end', fill: COLORS.muted },
    ),
    ...valueGrid(frame, 10),
    text(16, frame.top + frame.height / 2, 'per 100 ms', {
      'text-anchor': 'middle',
      fill: COLORS.muted,
      'font-size': 11,
      transform: `rotate(-90 16 ${num(frame.top + frame.height / 2)})`,
    }),
    ...timeMarks(frame, seconds),
  ];
  const slot = xOf(frame, BUCKET_MS) - xOf(frame, 0);
  for (const [bucket, counts] of countByBucket(outcomes)) {
    const x = xOf(frame, bucket * BUCKET_MS) + 1;
    const allowedTop = yOf(frame, counts.allowed);
    const rejectedTop = yOf(frame, counts.allowed + counts.rejected);
    const base = yOf(frame, 0);
    if (counts.allowed > 0)
      parts.push(rect(x, allowedTop, slot - 2, base - allowedTop, COLORS.allowed));
    if (counts.rejected > 0) {
      parts.push(rect(x, rejectedTop, slot - 2, allowedTop - rejectedTop, COLORS.rejected));
    }
  }
  parts.push(...timeAxis(frame, 1000, true));
  return parts;
}

function countByBucket(outcomes: readonly Outcome[]) {
  const buckets = new Map<number, { allowed: number; rejected: number }>();
  for (const { atMs, allowed } of outcomes) {
    const bucket = Math.floor(atMs / BUCKET_MS);
    const counts = buckets.get(bucket) ?? { allowed: 0, rejected: 0 };
    if (allowed) counts.allowed++;
    else counts.rejected++;
    buckets.set(bucket, counts);
  }
  return buckets;
}

function busiestBucket(outcomes: readonly Outcome[]): number {
  let most = 0;
  for (const { allowed, rejected } of countByBucket(outcomes).values()) {
    most = Math.max(most, allowed + rejected);
  }
  return most;
}

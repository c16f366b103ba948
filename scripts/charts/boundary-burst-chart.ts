import { type Algorithm } from '../../lib/algorithms/algorithm.js';
import { type Frame, timeAxis, timeMarks, valueGrid, xOf, yOf } from './frame.js';
import { BOUNDARY_GROUPS_MS, BOUNDARY_RANGE_MS, LIMIT, LIMIT_PERIOD_MS } from './patterns.js';
import { mostAllowedInAnyPeriod, type Outcome } from './replay.js';
import { COLORS, element, legendEntry, line, svgDocument, text } from './svg.js';

const WIDTH = 960;
const LEFT = 60;
const HEADER = 104;
const PANEL = 226;
const PLOT_HEIGHT = 130;
const TICKS = 14;

/**
 * The fixed window next to the sliding log, around a window boundary: for each, the requests
 * (allowed or rejected) and a line of how many were allowed in the preceding period.
 */
export function boundaryBurstChart(runs: ReadonlyMap<Algorithm, readonly Outcome[]>): string {
  const third = `${(BOUNDARY_GROUPS_MS[2] / 1000).toFixed(2)} s`;
  const n = LIMIT.threshold;
  const title = 'Across a window boundary: fixed window against sliding log';
  const setup =
    `Limit ${n} requests per second. ${n} requests 10 ms apart just before the boundary at 1 s, ` +
    `${n} just after it, and ${n} more from ${third}.`;
  const reading =
    'The line counts the requests allowed in the second up to each instant, so it covers every 1 s span.';
  const body = [
    text(LEFT, 28, title, { 'font-size': 18, 'font-weight': 'bold' }),
    text(LEFT, 48, setup, { fill: COLORS.muted }),
    text(LEFT, 66, reading, { fill: COLORS.muted }),
    legendEntry(LEFT, 90, COLORS.allowed, 'allowed request', 'tick'),
    legendEntry(LEFT + 140, 90, COLORS.rejected, 'rejected request', 'tick'),
    legendEntry(LEFT + 290, 90, COLORS.line, 'allowed in the last 1 s', 'line'),
    legendEntry(LEFT + 480, 90, COLORS.limit, `the limit, ${n}`, 'dashed'),
  ];
  let top = HEADER;
  for (const [algorithm, outcomes] of runs) {
    const frame: Frame = {
      left: LEFT,
      top: top + 40,
      width: WIDTH - LEFT - 30,
      height: PLOT_HEIGHT,
      fromMs: BOUNDARY_RANGE_MS.from,
      toMs: BOUNDARY_RANGE_MS.to,
      yMax: 2 * n,
    };
    body.push(...panel(frame, algorithm, outcomes));
    top += PANEL;
  }
  // The last panel ends with its time labels, short of a full panel.
  const height = top - PANEL + 212;
  return svgDocument(WIDTH, height, title, `${setup} ${reading}`, body);
}

function panel(frame: Frame, algorithm: Algorithm, outcomes: readonly Outcome[]): string[] {
  const most = mostAllowedInAnyPeriod(outcomes, LIMIT_PERIOD_MS);
  const boundaries: number[] = [];
  const firstBoundary = Math.ceil(frame.fromMs / LIMIT_PERIOD_MS) * LIMIT_PERIOD_MS;
  for (let ms = firstBoundary; ms <= frame.toMs; ms += LIMIT_PERIOD_MS) boundaries.push(ms);
  const verdict = most > LIMIT.threshold ? ` (${most / LIMIT.threshold}× the limit)` : '';
  const parts = [
    text(frame.left, frame.top - 24, algorithm, { 'font-weight': 'bold' }),
    text(frame.left + frame.width, frame.top - 24, `most allowed in any 1 s: ${most}${verdict}`, {
      'text-anchor': 'end',
      'font-weight': 'bold',
      fill: most > LIMIT.threshold ? COLORS.rejected : COLORS.allowed,
    }),
    ...valueGrid(frame, 5),
    ...timeMarks(frame, boundaries, true),
    ...boundaries.map((ms) =>
      text(xOf(frame, ms), frame.top - 6, 'window boundary', {
        'text-anchor': 'middle',
        fill: COLORS.muted,
        'font-size': 11,
      }),
    ),
    line(
      frame.left,
      yOf(frame, LIMIT.threshold),
      frame.left + frame.width,
      yOf(frame, LIMIT.threshold),
      {
        stroke: COLORS.limit,
        'stroke-width': 1.5,
        'stroke-dasharray': '5 3',
      },
    ),
    rollingLine(
      frame,
      outcomes.filter((o) => o.allowed).map((o) => o.atMs),
    ),
    ...requestTicks(frame, outcomes),
    ...timeAxis(frame, 250, true, TICKS),
  ];
  return parts;
}

/** How many allowed requests fall in (t - period, t], as a step line over the frame's range. */
function rollingLine(frame: Frame, allowedMs: readonly number[]): string {
  const changes = new Map<number, number>();
  for (const at of allowedMs) {
    changes.set(at, (changes.get(at) ?? 0) + 1);
    changes.set(at + LIMIT_PERIOD_MS, (changes.get(at + LIMIT_PERIOD_MS) ?? 0) - 1);
  }
  let count = 0;
  const points: [number, number][] = [];
  for (const at of [...changes.keys()].sort((a, b) => a - b)) {
    if (at <= frame.fromMs) {
      count += changes.get(at)!;
    } else if (at <= frame.toMs) {
      if (points.length === 0) points.push([frame.fromMs, count]);
      points.push([at, count]);
      count += changes.get(at)!;
      points.push([at, count]);
    }
  }
  if (points.length === 0) points.push([frame.fromMs, count]);
  points.push([frame.toMs, count]);
  const path = points
    .map(
      ([ms, value], i) =>
        `${i === 0 ? 'M' : 'L'}${xOf(frame, ms).toFixed(1)} ${yOf(frame, value).toFixed(1)}`,
    )
    .join(' ');
  return element('path', { d: path, fill: 'none', stroke: COLORS.line, 'stroke-width': 2 });
}

/** One short tick per request under the plot: green when allowed, red when rejected. */
function requestTicks(frame: Frame, outcomes: readonly Outcome[]): string[] {
  const top = frame.top + frame.height + 3;
  return outcomes.map(({ atMs, allowed }) =>
    line(xOf(frame, atMs), top, xOf(frame, atMs), top + TICKS - 4, {
      stroke: allowed ? COLORS.allowed : COLORS.rejected,
      'stroke-width': 1.5,
    }),
  );
}

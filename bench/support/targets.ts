/** The goals this module sets itself, each checked against what this run measured. */
import { type DecisionsId, type DecisionsResult } from '../decisions.js';
import { type Algorithm } from '../../lib/algorithms/algorithm.js';
import { type FloodResult, type FloodRow } from '../flood.js';
import { type MemoryResult } from '../memory.js';
import { type HttpRow, ratioToNoLimiter } from './http-rows.js';
import { fixed, ratio, table } from './markdown.js';

export interface Measured {
  readonly decisions?: DecisionsResult;
  readonly flood?: FloodResult;
  readonly memory?: MemoryResult;
  readonly http?: readonly HttpRow[];
}

interface Target {
  readonly measure: string;
  readonly target: string;
  /** Undefined when the section did not run. */
  readonly check?: { readonly measured: string; readonly met: boolean };
}

const atLeast = (value: number, goal: number) => ({
  measured: ratio(value),
  met: value >= goal,
});

/** Ours' flood rows against a bound: every row must meet it, and each is shown. */
function everyOurs(
  rows: readonly FloodRow[],
  value: (row: FloodRow) => number,
  met: (v: number) => boolean,
  show: (v: number) => string,
) {
  const ours = rows.filter((r) => r.id.startsWith('ours:'));
  const values = ours.map((r) => ({ name: r.id.slice('ours:'.length), v: value(r) }));
  return {
    measured: values.map(({ name, v }) => `${name} ${show(v)}`).join(', '),
    met: values.every(({ v }) => met(v)),
  };
}

export function renderTargets(m: Measured): string {
  const d = m.decisions?.perSecond;
  const flood = m.flood?.rows;
  const floodPeer = (id: string) => flood?.find((r) => r.id === id)?.perSecond ?? NaN;
  const bestDefaultPeer = Math.max(floodPeer('flexible'), floodPeer('nest-lab'));
  const http = m.http;
  const mem = m.memory;

  /** Ours with one algorithm against another contender of the decisions section. */
  const decisionRatio = (
    algorithm: Algorithm,
    peer: DecisionsId,
    peerLabel: string,
    goal: number,
    note = '',
  ): Target => ({
    measure: `decisions/s: ours ${algorithm}${note} vs ${peerLabel}`,
    target: `≥ ${goal.toFixed(1)}×`,
    check: d && atLeast(d.get(`ours:${algorithm}`)! / d.get(peer)!, goal),
  });

  const targets: Target[] = [
    decisionRatio('sliding-window', 'floor', 'floor', 0.9),
    decisionRatio('leaky-bucket', 'flexible', 'rate-limiter-flexible', 1.0, ' (GCRA)'),
    decisionRatio('fixed-window', 'flexible', 'rate-limiter-flexible', 1.0),
    decisionRatio('fixed-window', 'nest-lab', '@nest-lab', 1.2),
    {
      measure: 'flood decisions/s: ours vs the faster peer in default configuration',
      target: '≥ 5×',
      check:
        flood &&
        everyOurs(
          flood,
          (r) => r.perSecond / bestDefaultPeer,
          (v) => v >= 5,
          ratio,
        ),
    },
    {
      measure:
        'flood: Redis calls for the abusive key past the allowed, per retry window, after the opening burst',
      target: '≤ 1',
      check:
        flood &&
        everyOurs(
          flood,
          (r) => r.extraCallsPerWindow,
          (v) => v <= 1,
          fixed,
        ),
    },
    {
      measure: 'flood decisions/s: ours vs rate-limiter-flexible with inMemoryBlockOnConsumed',
      target: '≥ 1.0×',
      check:
        flood &&
        everyOurs(
          flood,
          (r) => r.perSecond / floodPeer('flexible:in-memory-block'),
          (v) => v >= 1,
          ratio,
        ),
    },
    {
      measure: 'HTTP Fastify req/s: ours (Redis) vs no limiter',
      target: '≥ 0.6×',
      check: http && atLeast(ratioToNoLimiter(http, 'fastify', 'ours (Redis)'), 0.6),
    },
    {
      measure: 'HTTP Fastify req/s: ours (memory) vs no limiter',
      target: '≥ 0.9×',
      check: http && atLeast(ratioToNoLimiter(http, 'fastify', 'ours (memory)'), 0.9),
    },
    {
      measure: 'memory: sliding log bytes per in-window entry, below 128 entries',
      target: '≤ 24 B',
      check: mem && {
        measured: `${fixed(mem.slidingBytesPerEntry)} B`,
        met: mem.slidingBytesPerEntry <= 24,
      },
    },
    ...(['leaky-bucket', 'fixed-window', 'sliding-window-counter'] as const).map((a) => ({
      measure: `memory: ours ${a} bytes per key (short key)`,
      target: '≤ 90 B',
      check: mem && {
        measured: `${mem.smallKeyBytes.get(a)} B`,
        met: mem.smallKeyBytes.get(a)! <= 90,
      },
    })),
  ];

  const rows = targets.map((t) => [
    t.measure,
    t.target,
    t.check?.measured ?? 'not run',
    t.check === undefined ? 'not run' : t.check.met ? 'met' : '**MISSED**',
  ]);
  return ['## Targets', '', table(['measure', 'target', 'measured', 'met?'], rows)].join('\n');
}

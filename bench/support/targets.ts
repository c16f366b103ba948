/** The goals this module sets itself, each checked against what this run measured. */
import { type AloneResult } from '../alone.js';
import { CLUSTER_SLOT_GROUPS, type ClusterId, type ClusterResult } from '../cluster.js';
import { type ConsoleResult } from '../console.js';
import { type DecisionsResult } from '../decisions.js';
import { type FloodResult, type FloodRow } from '../flood.js';
import { type LatencyResult } from '../latency.js';
import { type MemoryResult } from '../memory.js';
import { onLibrary, type SharedId } from './decisions-contenders.js';
import { type HttpRow, httpRatioBetween } from './http-rows.js';
import { type Library, LIBRARIES } from './limiter.js';
import { fixed, ratio, table } from './markdown.js';

export interface Measured {
  readonly decisions?: DecisionsResult;
  readonly alone?: AloneResult;
  readonly cluster?: ClusterResult;
  readonly flood?: FloodResult;
  readonly memory?: MemoryResult;
  readonly http?: readonly HttpRow[];
  readonly latency?: LatencyResult;
  readonly console?: ConsoleResult;
}

type InlineComparisons = DecisionsResult['inline'];

interface Target {
  readonly measure: string;
  readonly target: string;
  /** Undefined when the section did not run. */
  readonly check?: { readonly measured: string; readonly met: boolean };
}

/** `≥ 0.9×`, `≥ 1.0×`, `≥ 0.95×`: as many decimals as the goal needs, at least one. */
const atLeastText = (goal: number) => `≥ ${goal.toFixed(2).replace(/(\.\d)0$/, '$1')}×`;

const atLeast = (value: number, goal: number) => ({
  measured: ratio(value),
  met: value >= goal,
});

const atMost = (value: number, goal: number) => ({
  measured: ratio(value),
  met: value <= goal,
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
  const flood = m.flood?.rows;
  const floodPeer = (id: string) => flood?.find((r) => r.id === id)?.perSecond ?? NaN;
  const http = m.http;
  const mem = m.memory;

  /** One decisions row against another, both on `library`. */
  const decisionRatio = (
    library: Library,
    ours: SharedId,
    peer: SharedId,
    measure: string,
    goal: number,
  ): Target => ({
    measure: `decisions/s on ${library}: ${measure}`,
    target: atLeastText(goal),
    check:
      m.decisions &&
      atLeast(m.decisions.ratio(onLibrary(ours, library), onLibrary(peer, library)), goal),
  });
  /** Redis CPU per decision of ours against rate-limiter-flexible's, on `library`. */
  const redisCpu = (library: Library, ours: SharedId, measure: string): Target => ({
    measure: `Redis CPU µs per decision on ${library}: ${measure}`,
    target: '≤ 0.50×',
    check:
      m.decisions &&
      atMost(
        m.decisions.redisCpuRatio(onLibrary(ours, library), onLibrary('flexible', library)),
        0.5,
      ),
  });
  const latency = (inFlight: number, field: 'p50Ms' | 'p99Ms'): Target => ({
    measure: `latency ${field.slice(0, 3)} at ${inFlight} in flight: batches vs batchSize: 1`,
    target: '≤ 1.00×',
    check: m.latency && atMost(m.latency.ratio(inFlight, field), 1),
  });
  /** Each decisions target once per client library, side by side. */
  const perLibrary = (ours: SharedId, peer: SharedId, measure: string, goal: number) =>
    LIBRARIES.map((library) => decisionRatio(library, ours, peer, measure, goal));
  const inline = m.decisions?.inline;
  const inlineTarget = (store: string, pick: (i: InlineComparisons) => number): Target => ({
    measure: `consume ops/s on ${store}: policy written inline vs hoisted`,
    target: atLeastText(0.95),
    check: inline && atLeast(pick(inline), 0.95),
  });
  const httpRatio = (adapter: string, config: string, to: string, goal: number): Target => ({
    measure: `HTTP ${adapter === 'express' ? 'Express' : 'Fastify'} req/s: ${config} vs ${to}`,
    target: atLeastText(goal),
    check: http && atLeast(httpRatioBetween(http, adapter, config, to), goal),
  });

  const alone = (algorithm: Parameters<AloneResult['ratio']>[0], to: string, goal: number) => ({
    measure: `Redis time per decision, one at a time: ours ${algorithm} vs ${to}`,
    target: `≤ ${goal.toFixed(2)}×`,
    check: m.alone && atMost(m.alone.ratio(algorithm), goal),
  });

  const cluster = m.cluster;
  const onCluster = (id: ClusterId): Target[] => [
    {
      measure: `3-master Cluster decisions/s: ${id} vs rate-limiter-flexible`,
      target: atLeastText(1.2),
      check: cluster && atLeast(cluster.ratio(id), 1.2),
    },
    {
      measure: `3-master Cluster Redis CPU per decision: ${id} vs rate-limiter-flexible`,
      target: '≤ 0.80×',
      check: cluster && atMost(cluster.cpuRatio(id), 0.8),
    },
    {
      measure: `3-master Cluster decisions answered by the fallback: ${id}`,
      target: '0',
      check: cluster && { measured: String(cluster.degraded(id)), met: cluster.degraded(id) === 0 },
    },
  ];

  const targets: Target[] = [
    alone('fixed-window', 'rate-limiter-flexible', 1),
    alone('leaky-bucket', 'rate-limiter-flexible', 1),
    alone('token-bucket', 'rate-limiter-flexible', 1),
    alone('sliding-window', 'floor', 1.2),
    ...perLibrary('ours:sliding-window', 'floor', 'ours sliding-window vs floor', 1.2),
    ...perLibrary(
      'ours:leaky-bucket',
      'flexible',
      'ours leaky-bucket (GCRA) vs rate-limiter-flexible',
      1.2,
    ),
    ...perLibrary(
      'ours:fixed-window',
      'flexible',
      'ours fixed-window vs rate-limiter-flexible',
      1.2,
    ),
    ...perLibrary(
      'ours:token-bucket',
      'flexible',
      'ours token-bucket vs rate-limiter-flexible',
      1.2,
    ),
    ...LIBRARIES.flatMap((library) => [
      redisCpu(library, 'ours:fixed-window', 'ours fixed-window vs rate-limiter-flexible'),
      redisCpu(library, 'ours:leaky-bucket', 'ours leaky-bucket (GCRA) vs rate-limiter-flexible'),
      redisCpu(library, 'ours:token-bucket', 'ours token-bucket vs rate-limiter-flexible'),
    ]),
    ...onCluster(`ours:fixed-window:g${CLUSTER_SLOT_GROUPS}@ioredis`),
    ...onCluster(`ours:sliding-window:g${CLUSTER_SLOT_GROUPS}@ioredis`),
    ...onCluster(`ours:fixed-window:g${CLUSTER_SLOT_GROUPS}@node-redis`),
    latency(1, 'p50Ms'),
    latency(1, 'p99Ms'),
    latency(16, 'p50Ms'),
    latency(16, 'p99Ms'),
    ...perLibrary(
      'ours:sliding-window-counter',
      'ours:fixed-window',
      'ours sliding-window-counter vs ours fixed-window',
      0.95,
    ),
    inlineTarget('Redis (ioredis)', (i) => i.redis.ratio),
    inlineTarget('memory', (i) => i.memory.ratio),
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
    httpRatio('fastify', 'ours (Redis)', 'no limiter', 0.7),
    httpRatio('fastify', 'ours (memory)', 'no limiter', 0.95),
    httpRatio('express', 'ours (Redis)', '@nestjs/throttler + @nest-lab Redis', 1.0),
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
    {
      measure: 'console imported: route decisions/s, allowed, vs without it',
      target: atLeastText(0.97),
      check: m.console && atLeast(m.console.allowedRatio, 0.97),
    },
    {
      measure: 'console imported: route decisions/s, a flood turned away, vs without it',
      target: atLeastText(0.97),
      check: m.console && atLeast(m.console.floodRatio, 0.97),
    },
  ];

  const rows = targets.map((t) => [
    t.measure,
    t.target,
    t.check?.measured ?? 'not run',
    t.check === undefined ? 'not run' : t.check.met ? 'met' : '**MISSED**',
  ]);
  return ['## Targets', '', table(['measure', 'target', 'measured', 'met?'], rows)].join('\n');
}

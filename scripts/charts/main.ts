/**
 * Draws the algorithm charts of the README from real decisions of the memory store under a set
 * clock, so they match what the code does and come out identical on every run.
 *
 *   npm run docs:charts    # writes docs/algorithms.svg and docs/boundary-burst.svg
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { type Algorithm } from '../../lib/algorithms/algorithm.js';
import { algorithmsChart } from './algorithms-chart.js';
import { boundaryBurstChart } from './boundary-burst-chart.js';
import { boundaryBurst, LIMIT, trickleAndBursts } from './patterns.js';
import { RATE_ALGORITHMS } from '../../lib/algorithms/registry.js';
import { type Outcome, replay } from './replay.js';

async function replayAll(algorithms: readonly Algorithm[], arrivalsMs: readonly number[]) {
  const runs = new Map<Algorithm, readonly Outcome[]>();
  for (const algorithm of algorithms)
    runs.set(algorithm, await replay(algorithm, LIMIT, arrivalsMs));
  return runs;
}

const charts = {
  'docs/algorithms.svg': algorithmsChart(await replayAll(RATE_ALGORITHMS, trickleAndBursts())),
  'docs/boundary-burst.svg': boundaryBurstChart(
    await replayAll(['fixed-window', 'sliding-window'], boundaryBurst()),
  ),
};
mkdirSync('docs', { recursive: true });
for (const [path, svg] of Object.entries(charts)) {
  writeFileSync(path, svg);
  console.log(`wrote ${path} (${svg.length} bytes)`);
}

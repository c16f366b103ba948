/**
 * What limit overrides cost a decision: `RateLimitService.consume` on the memory store with no
 * override in force, with one on another policy, with one for every tracker of the policy
 * decided, and with overrides for single trackers that the keys miss or, for half of them, hit.
 */
import { type RateLimitPolicy, type RateLimitService } from '../../lib/index.js';
import { integer, table } from './markdown.js';
import {
  consumeRate,
  type SideBySide,
  SIDE_BY_SIDE_KEY_LIST,
  SIDE_BY_SIDE_KEYS,
  SIDE_BY_SIDE_ROUNDS,
  SIDE_BY_SIDE_WARMUP,
  sideBySide,
  sideBySideCells,
  startMemoryService,
} from './side-by-side.js';

// Named, as a policy an override can reach must be. No row's count comes near either threshold.
const POLICY: RateLimitPolicy = {
  name: 'bench',
  algorithm: 'fixed-window',
  period: 60,
  threshold: 1_000_000,
};
const OTHER: RateLimitPolicy = {
  name: 'other',
  algorithm: 'fixed-window',
  period: 60,
  threshold: 10,
};
const RAISED = { threshold: 2_000_000 };

export type OverrideRowId = 'none' | 'other' | 'all' | 'tracker-missed' | 'tracker-hit';

const IDS: readonly OverrideRowId[] = ['none', 'other', 'all', 'tracker-missed', 'tracker-hit'];

/** Every other key has an override of its own in the last row. */
const HIT_KEYS = SIDE_BY_SIDE_KEY_LIST.filter((_, k) => k % 2 === 0);

const LABELS: Record<OverrideRowId, string> = {
  none: 'no override in force',
  other: 'an override of another policy',
  all: 'an override of this policy, every tracker',
  'tracker-missed': 'an override for one tracker, not among the keys',
  'tracker-hit': `overrides for ${integer(HIT_KEYS.length)} trackers, half of the keys`,
};

/** Puts a row's overrides in force on its own app; an override is for a policy the app knows. */
async function setUp(id: OverrideRowId, service: RateLimitService): Promise<void> {
  await service.consume('setup', POLICY);
  await service.consume('setup', OTHER);
  if (id === 'other') await service.override('other', RAISED);
  if (id === 'all') await service.override('bench', RAISED);
  if (id === 'tracker-missed') await service.override('bench', RAISED, { tracker: 'nobody' });
  if (id === 'tracker-hit') {
    // Together: the registry reads the source once for the changes that arrive meanwhile.
    await Promise.all(HIT_KEYS.map((tracker) => service.override('bench', RAISED, { tracker })));
  }
  const expected = {
    none: 0,
    other: 1,
    all: 1,
    'tracker-missed': 1,
    'tracker-hit': HIT_KEYS.length,
  };
  const inForce = (await service.overrides()).length;
  if (inForce !== expected[id]) throw new Error(`overrides ${id}: ${inForce} in force`);
}

/** Each row on an app of its own, side by side as the telemetry rows are. */
export async function overridesOnMemory(quick: boolean): Promise<SideBySide<OverrideRowId>> {
  const apps = await Promise.all(IDS.map(() => startMemoryService({})));
  const services = new Map(IDS.map((id, k) => [id, apps[k].service]));
  try {
    for (const id of IDS) await setUp(id, services.get(id)!);
    return await sideBySide('overrides', IDS, quick, (id, n) =>
      consumeRate(services.get(id)!, POLICY, n),
    );
  } finally {
    for (const { app } of apps) await app.close();
  }
}

/** The table of the decisions section that shows what overrides cost, in force or not. */
export function renderOverrides(c: SideBySide<OverrideRowId>): string {
  return [
    '### Overrides',
    '',
    table(
      ['overrides', 'ops/s', 'vs none', 'µs per decision', 'added µs'],
      IDS.map((id) => [LABELS[id], ...sideBySideCells(c.perSecond, c.vsBaseline, id, 'none')]),
    ),
    '',
    "`RateLimitService.consume(key, policy)` on the memory store, the policy `{ name: 'bench', " +
      "algorithm: 'fixed-window', period: 60, threshold: 1000000 }` held in a constant, one " +
      `call at a time, ${integer(c.calls)} calls over ${integer(SIDE_BY_SIDE_KEYS)} keys ` +
      `(\`user:0\` … \`user:${SIDE_BY_SIDE_KEYS - 1}\`) per run, ${SIDE_BY_SIDE_ROUNDS} rounds ` +
      `in rotated order after ${integer(SIDE_BY_SIDE_WARMUP)} warm-up calls each, a garbage ` +
      'collection before each run. Each row has an app of its own (`RateLimitModule.forRoot({})`), ' +
      'its overrides set through `RateLimitService.override` before the warm-up, every one ' +
      'raising the threshold to 2,000,000 so that nothing is rejected. "no override in force" ' +
      'is the baseline: the decision checks that none is. "an override of another policy": one ' +
      "for every tracker of a policy named `other`, so each decision looks its own policy's name " +
      'up and finds nothing. "every tracker": the policy decided is replaced by its overridden ' +
      'form, kept from one call to the next. "one tracker, not among the keys": an override for ' +
      'the tracker `nobody`, so each decision encodes its key as a tracker and looks it up in ' +
      'vain. The last row has an override for each of `user:0`, `user:2`, … (the service takes ' +
      'the key as the tracker), so every other decision finds one and goes on under its limit. ' +
      '"vs none" is the median of the ratios within each round.',
  ].join('\n');
}

/**
 * The request timelines the charts replay, in milliseconds from a clock that starts at 0. The
 * fixed windows line up with whole seconds, since they are aligned on multiples of the period.
 */

/** The limit every chart applies. */
export const LIMIT = { period: '1s', threshold: 10 } as const;
export const LIMIT_PERIOD_MS = 1000;

/** The algorithms chart: a steady trickle below the limit, and bursts at the top of some seconds. */
export const TRICKLE_AND_BURSTS = {
  durationMs: 6000,
  trickleEveryMs: 200,
  burstSize: 30,
  burstSeconds: [1, 2, 4],
} as const;

/** Arrival times of the algorithms chart: one trickle request every 200 ms, bursts one per ms. */
export function trickleAndBursts(): number[] {
  const { durationMs, trickleEveryMs, burstSize, burstSeconds } = TRICKLE_AND_BURSTS;
  const arrivals: number[] = [];
  // Offset so no trickle request lands inside a burst.
  for (let t = 150; t < durationMs; t += trickleEveryMs) arrivals.push(t);
  for (const second of burstSeconds) {
    for (let i = 0; i < burstSize; i++) arrivals.push(second * 1000 + i);
  }
  return arrivals.sort((a, b) => a - b);
}

/**
 * The boundary chart: ten requests just before the window boundary at 1 s, ten just after it, and
 * ten more one period after the first ones, 10 ms apart within each group.
 */
export const BOUNDARY_GROUPS_MS = [900, 1000, 1900] as const;
export const BOUNDARY_RANGE_MS = { from: 500, to: 2500 } as const;

export function boundaryBurst(): number[] {
  return BOUNDARY_GROUPS_MS.flatMap((start) =>
    Array.from({ length: LIMIT.threshold }, (_, i) => start + i * 10),
  );
}

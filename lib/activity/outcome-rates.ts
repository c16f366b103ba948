/** What became of a decision, as the console charts it; `Degraded`: answered by `onStoreError`. */
export const Outcome = { Allowed: 0, Limited: 1, Degraded: 2 } as const;
export type Outcome = (typeof Outcome)[keyof typeof Outcome];

const OUTCOMES = 3;
/** The chart's resolution: decisions are counted in buckets of 10 s. */
export const BUCKET_MS = 10_000;
const BUCKETS_PER_MINUTE = 60_000 / BUCKET_MS;
/** Fifteen minutes of buckets: the chart's span. */
const KEPT = 15 * BUCKETS_PER_MINUTE;

/**
 * One minute of a route's decisions, as instances share them: per 10 s bucket of the minute,
 * the allowed, limited and degraded counts, bucket after bucket (18 numbers).
 */
export type MinuteCounts = number[];

/** A route's counts over the chart's span, summed over instances: one entry per bucket. */
export interface RouteRates {
  readonly route: string;
  readonly allowed: number[];
  readonly limited: number[];
  readonly degraded: number[];
}

/** One route's buckets: where {@link OutcomeRates.add} counts. */
export interface RouteRing {
  /** The bucket (ms since the epoch / BUCKET_MS) each slot holds now. */
  readonly ids: Float64Array;
  readonly counts: Float64Array;
}

/**
 * How many decisions each route had, by outcome, in buckets of 10 s over the last 15 minutes:
 * a fixed ring per route, so counting is two array writes and memory does not grow with traffic.
 */
export class OutcomeRates {
  private readonly rings = new Map<string, RouteRing>();

  constructor(private readonly maxRoutes = 1000) {}

  count(route: string, outcome: Outcome, now: number): void {
    const ring = this.ringOf(route);
    if (ring !== undefined) OutcomeRates.add(ring, outcome, now);
  }

  /** The ring `route` counts in, to keep and count in with {@link add}; undefined past the bound. */
  ringOf(route: string): RouteRing | undefined {
    let ring = this.rings.get(route);
    if (ring === undefined) {
      // Routes are a handler's labels, so few; the bound only keeps a bug from growing the map.
      if (this.rings.size >= this.maxRoutes) return undefined;
      ring = { ids: new Float64Array(KEPT).fill(-1), counts: new Float64Array(KEPT * OUTCOMES) };
      this.rings.set(route, ring);
    }
    return ring;
  }

  /** Counts one decision in `ring`. */
  static add(ring: RouteRing, outcome: Outcome, now: number): void {
    const bucket = Math.floor(now / BUCKET_MS);
    const slot = bucket % KEPT;
    if (ring.ids[slot] !== bucket) {
      ring.ids[slot] = bucket;
      ring.counts.fill(0, slot * OUTCOMES, slot * OUTCOMES + OUTCOMES);
    }
    ring.counts[slot * OUTCOMES + outcome]++;
  }

  /** This instance's counts of `minute` (ms since the epoch / 60,000), by route; none if idle. */
  minute(minute: number): Record<string, MinuteCounts> {
    const shared: Record<string, MinuteCounts> = {};
    const first = minute * BUCKETS_PER_MINUTE;
    for (const [route, ring] of this.rings) {
      const counts: MinuteCounts = new Array<number>(BUCKETS_PER_MINUTE * OUTCOMES).fill(0);
      let any = false;
      for (let b = 0; b < BUCKETS_PER_MINUTE; b++) {
        const slot = (first + b) % KEPT;
        if (ring.ids[slot] !== first + b) continue;
        for (let o = 0; o < OUTCOMES; o++) {
          counts[b * OUTCOMES + o] = ring.counts[slot * OUTCOMES + o];
          any ||= counts[b * OUTCOMES + o] !== 0;
        }
      }
      if (any) shared[route] = counts;
    }
    return shared;
  }

  /**
   * The rates of every route over the 15 minutes up to `now`, from minutes' counts by route (any
   * instances', each minute once per instance): per bucket, decisions per second.
   */
  static chart(
    minutes: ReadonlyArray<{ minute: number; counts: Record<string, MinuteCounts> }>,
    now: number,
  ) {
    const last = Math.floor(now / BUCKET_MS);
    const from = last - KEPT + 1;
    const byRoute = new Map<string, RouteRates>();
    for (const { minute, counts } of minutes) {
      for (const [route, numbers] of Object.entries(counts)) {
        let rates = byRoute.get(route);
        if (rates === undefined) {
          const zeros = () => new Array<number>(KEPT).fill(0);
          rates = { route, allowed: zeros(), limited: zeros(), degraded: zeros() };
          byRoute.set(route, rates);
        }
        for (let b = 0; b < BUCKETS_PER_MINUTE; b++) {
          const at = minute * BUCKETS_PER_MINUTE + b - from;
          if (at < 0 || at >= KEPT) continue;
          const perSecond = (o: number) => (numbers[b * OUTCOMES + o] ?? 0) / (BUCKET_MS / 1000);
          rates.allowed[at] += perSecond(Outcome.Allowed);
          rates.limited[at] += perSecond(Outcome.Limited);
          rates.degraded[at] += perSecond(Outcome.Degraded);
        }
      }
    }
    const routes = [...byRoute.values()].sort((a, b) => a.route.localeCompare(b.route));
    return { fromMs: from * BUCKET_MS, bucketMs: BUCKET_MS, routes };
  }
}

import { mergeSummaries, type TopEntry, TopK, type TopSummary } from './top-k.js';

/** A tracker turned away on a route under a policy, as the console lists it. */
export interface LimitedTracker {
  readonly tracker: string;
  readonly route: string;
  readonly policy: string;
  /** How often it was turned away in the window: at most `error` more than the truth. */
  readonly limited: number;
  readonly error: number;
  /** When it was last turned away (ms since the epoch). */
  readonly lastLimitedAt: number;
}

/** The summaries of one minute (ms since the epoch / 60,000), as instances share them. */
export interface MinuteSummary {
  readonly minute: number;
  readonly summary: TopSummary;
}

const MINUTE_MS = 60_000;

/**
 * Who this instance turned away, minute by minute over the last `minutes`: one bounded summary
 * per minute (see TopK), so a flood of distinct trackers costs no more memory than one tracker.
 * A window of the last n minutes merges the n newest summaries, the current minute's included.
 */
export class LimitedTrackers {
  private readonly ring: { minute: number; top: TopK }[] = [];

  constructor(
    private readonly capacity = 128,
    private readonly minutes = 16,
  ) {}

  /**
   * Counts one rejection at `now` (ms) under `key`: {@link subject} and the tracker, or any string
   * that {@link recent} is given a name for. The decision feed counts route keys, and names them
   * only when the summaries are read, so that a rejection costs no string work.
   */
  count(key: string, now: number): void {
    this.minuteOf(now).add(key, now);
  }

  /**
   * A route and a policy as the head of a summary's keys: JSON, then a NUL, which JSON never
   * holds unescaped, so the tracker after it can be anything.
   */
  static subject(route: string, policy: string): string {
    return JSON.stringify([route, policy]) + '\u0000';
  }

  /**
   * This instance's summaries of the minutes of the last `minutes`, newest first. `nameOf` turns
   * a key counted by {@link count} into its subject and tracker; keys it names alike are
   * added up, and those it cannot name left out.
   */
  recent(
    now: number,
    minutes = this.minutes,
    nameOf?: (key: string) => string | undefined,
  ): MinuteSummary[] {
    const from = Math.floor(now / MINUTE_MS) - minutes + 1;
    return this.ring
      .filter(({ minute }) => minute >= from)
      .map(({ minute, top }) => {
        const summary = top.summary();
        return { minute, summary: nameOf === undefined ? summary : renamed(summary, nameOf) };
      });
  }

  /** The `limit` most limited over the last `minutes`, from these summaries (any instances'). */
  static top(summaries: readonly MinuteSummary[], limit: number): LimitedTracker[] {
    return mergeSummaries(
      summaries.map(({ summary }) => summary),
      limit,
    ).map(({ key, count, error, last }) => {
      const end = key.indexOf('\u0000');
      const [route, policy] = JSON.parse(key.slice(0, end)) as [string, string];
      const tracker = key.slice(end + 1);
      return { tracker, route, policy, limited: count, error, lastLimitedAt: last };
    });
  }

  private minuteOf(now: number): TopK {
    const minute = Math.floor(now / MINUTE_MS);
    const newest = this.ring[0];
    if (newest !== undefined && newest.minute === minute) return newest.top;
    // A clock that steps back counts in the minute it finds, or starts one.
    const known = this.ring.find((slot) => slot.minute === minute);
    if (known !== undefined) return known.top;
    const top = new TopK(this.capacity);
    this.ring.unshift({ minute, top });
    this.ring.sort((a, b) => b.minute - a.minute);
    this.ring.length = Math.min(this.ring.length, this.minutes);
    return top;
  }
}

/** `summary` with its keys named by `nameOf`: entries named alike added up (see `recent`). */
function renamed(summary: TopSummary, nameOf: (key: string) => string | undefined): TopSummary {
  const byName = new Map<string, TopEntry>();
  for (const entry of summary.entries) {
    const key = nameOf(entry.key);
    if (key === undefined) continue;
    const known = byName.get(key);
    byName.set(
      key,
      known === undefined
        ? { ...entry, key }
        : {
            key,
            count: known.count + entry.count,
            error: known.error + entry.error,
            last: Math.max(known.last, entry.last),
          },
    );
  }
  return { entries: [...byName.values()], unseenAtMost: summary.unseenAtMost };
}

import { type MinuteCounts } from './outcome-rates.js';
import { type KnownRoute } from './route-directory.js';
import { type TopSummary } from './top-k.js';

/** One instance's activity in one minute, as it shares it with the others. */
export interface ActivityReport {
  /** The instance, a random id it draws when it starts. */
  readonly instance: string;
  /** Ms since the epoch / 60,000, by the instance's clock. */
  readonly minute: number;
  /** Who it turned away that minute (see `LimitedTrackers`). */
  readonly top: TopSummary;
  /** Its decisions that minute, by route (see `OutcomeRates`). */
  readonly counts: Record<string, MinuteCounts>;
  /**
   * The routes it knows and their keys, so that any instance's console can act on all of them:
   * in the report of the minute in progress only (the routes do not change with the minutes).
   */
  readonly routes?: readonly KnownRoute[];
}

/** How long a minute's reports are kept: the console's longest window (16 minutes), and one more. */
export const KEPT_MINUTES = 17;

/**
 * Where instances share their activity: Redis for the Redis store, so that the console of any
 * instance shows every instance's; this process alone for the memory store and a custom store.
 * An instance shares a few times a minute, never per decision.
 */
export interface ActivityExchange {
  /**
   * Whether other instances' reports reach this one: false where the store lives in this process,
   * so that the console says it shows this instance alone.
   */
  readonly shared: boolean;
  /** Puts `report` in place of the instance's earlier one for the same minute. */
  share(report: ActivityReport): Promise<void>;
  /** Every instance's reports of `minutes`. */
  read(minutes: readonly number[]): Promise<ActivityReport[]>;
}

/** The exchange of one process: the memory store's, and a custom store's. */
export class MemoryActivityExchange implements ActivityExchange {
  readonly shared: boolean = false;
  private readonly minutes = new Map<number, Map<string, ActivityReport>>();

  share(report: ActivityReport): Promise<void> {
    let reports = this.minutes.get(report.minute);
    if (reports === undefined) {
      reports = new Map();
      this.minutes.set(report.minute, reports);
      for (const minute of this.minutes.keys()) {
        if (minute <= report.minute - KEPT_MINUTES) this.minutes.delete(minute);
      }
    }
    reports.set(report.instance, report);
    return Promise.resolve();
  }

  read(minutes: readonly number[]): Promise<ActivityReport[]> {
    return Promise.resolve(minutes.flatMap((m) => [...(this.minutes.get(m)?.values() ?? [])]));
  }
}

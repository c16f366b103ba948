import { randomUUID } from 'node:crypto';
import {
  Inject,
  Injectable,
  Logger,
  type OnModuleDestroy,
  type OnModuleInit,
} from '@nestjs/common';
import { type ActivityExchange, type ActivityReport } from '../activity/activity-exchange.js';
import { DecisionFeed } from '../activity/decision-feed.js';
import { type LimitedTracker, LimitedTrackers } from '../activity/limited-trackers.js';
import { OutcomeRates } from '../activity/outcome-rates.js';
import { type KnownRoute } from '../activity/route-directory.js';
import { RATE_LIMIT_ACTIVITY } from '../rate-limit.constants.js';

/** How often an instance shares its activity: the console of another sees it this much later at most. */
export const SHARE_EVERY_MS = 2000;
const MINUTE_MS = 60_000;
/** How long one read of the store serves the console's calls (those of one poll of a page). */
const READ_EVERY_MS = 500;
/** The minutes a read takes in: the longest any call asks for (the chart's 15, and the one in progress). */
const READ_MINUTES = 16;

/**
 * Turns the feed on while the console is imported, and shares this instance's activity with the
 * others every {@link SHARE_EVERY_MS} on one unref'd timer (never per decision). Reads merge every
 * instance's reports, this instance's own taken live rather than as last shared.
 */
@Injectable()
export class ActivitySharing implements OnModuleInit, OnModuleDestroy {
  readonly instance = randomUUID();
  private readonly logger = new Logger('RateLimitConsole');
  private timer: NodeJS.Timeout | undefined;
  private sharedMinute: number | undefined;
  private failing = false;
  private reading: { newest: number; at: number; reports: Promise<ActivityReport[]> } | undefined;
  /** Why the last read of the store failed; undefined when it read every instance's. */
  private readError: string | undefined;

  constructor(
    private readonly feed: DecisionFeed,
    @Inject(RATE_LIMIT_ACTIVITY) private readonly exchange: ActivityExchange,
  ) {}

  onModuleInit(): void {
    this.feed.active = true;
    this.timer = setInterval(() => void this.share(), SHARE_EVERY_MS);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
    this.feed.active = false;
  }

  /** Why the last read of the other instances' activity failed; undefined when it did not. */
  get readFailure(): string | undefined {
    return this.readError;
  }

  /**
   * Whose figures the reads show: every instance's, or this one's alone, and why (the store keeps
   * no shared activity, or could not be read).
   */
  reach(): { instances: 'all' } | { instances: 'this one'; reason: string } {
    if (!this.exchange.shared) {
      return { instances: 'this one', reason: 'the store is in this process' };
    }
    const error = this.readError;
    return error === undefined ? { instances: 'all' } : { instances: 'this one', reason: error };
  }

  /** The `limit` most limited trackers of the last `minutes`, across every instance. */
  async top(minutes: number, limit: number, now = Date.now()): Promise<LimitedTracker[]> {
    const reports = await this.reports(minutes, now);
    return LimitedTrackers.top(
      reports.map(({ minute, top }) => ({ minute, summary: top })),
      limit,
    );
  }

  /** Every route some instance has decided on, with its keys; this instance's own where both know it. */
  async routes(now = Date.now()): Promise<KnownRoute[]> {
    const reports = await this.reports(2, now);
    const byRoute = new Map<string, KnownRoute>();
    for (const report of reports) {
      for (const route of report.routes ?? []) byRoute.set(route.route, route);
    }
    return [...byRoute.values()].sort((a, b) => a.route.localeCompare(b.route));
  }

  /** Decisions per second by route and outcome over the last 15 minutes, across every instance. */
  async rates(now = Date.now()) {
    const reports = await this.reports(16, now);
    return OutcomeRates.chart(reports, now);
  }

  /** Shares this minute's report, and the last one of the minute before once it has ended. */
  async share(now = Date.now()): Promise<void> {
    const minute = Math.floor(now / MINUTE_MS);
    try {
      if (this.sharedMinute !== undefined && this.sharedMinute < minute) {
        await this.exchange.share(this.report(this.sharedMinute, now));
      }
      await this.exchange.share(this.report(minute, now));
      this.sharedMinute = minute;
      if (this.failing) this.logger.log('The console shares its activity again');
      this.failing = false;
    } catch (error) {
      // The console is not worth a log line every two seconds while the store is down.
      if (!this.failing) {
        const reason = error instanceof Error ? error.message : String(error);
        this.logger.warn(`The console could not share its activity (${reason}); it tries again`);
      }
      this.failing = true;
    }
  }

  /**
   * This instance's report of `minute`, and of each of `more` minutes too, in that order. Only
   * the report of the minute in progress carries the routes.
   */
  private report(minute: number, now: number): ActivityReport;
  private report(minute: number, now: number, more: readonly number[]): ActivityReport[];
  private report(minute: number, now: number, more?: readonly number[]) {
    // Read once for all the minutes asked: naming the keys is the costly part.
    const recent = this.feed.limited.recent(now, undefined, (key) => this.feed.nameOf(key));
    const current = Math.floor(now / MINUTE_MS);
    const of = (m: number): ActivityReport => ({
      instance: this.instance,
      minute: m,
      top: recent.find((r) => r.minute === m)?.summary ?? { entries: [], unseenAtMost: 0 },
      counts: this.feed.rates.minute(m),
      ...(m === current ? { routes: this.feed.directory.known() } : {}),
    });
    return more === undefined ? of(minute) : [minute, ...more].map(of);
  }

  /** Every instance's reports of the last `minutes`, this instance's own taken live. */
  private async reports(minutes: number, now: number): Promise<ActivityReport[]> {
    const newest = Math.floor(now / MINUTE_MS);
    const wanted = Array.from({ length: minutes }, (_, i) => newest - i);
    const others = (await this.others(newest, now)).filter((r) => r.minute > newest - minutes);
    return [...others, ...this.report(wanted[0], now, wanted.slice(1))];
  }

  /**
   * The other instances' reports of the last {@link READ_MINUTES}, read once for the calls of
   * {@link READ_EVERY_MS}: a page's poll asks for the top list and the chart at once.
   */
  private others(newest: number, now: number): Promise<ActivityReport[]> {
    const last = this.reading;
    if (last !== undefined && last.newest === newest && Math.abs(now - last.at) < READ_EVERY_MS) {
      return last.reports;
    }
    const wanted = Array.from({ length: READ_MINUTES }, (_, i) => newest - i);
    const reports = this.exchange.read(wanted).then(
      (read) => {
        this.readError = undefined;
        return read.filter((r) => r.instance !== this.instance);
      },
      (error: unknown) => {
        // The store is down: this instance's own activity is still worth showing, said to be so.
        this.readError = error instanceof Error ? error.message : String(error);
        return [];
      },
    );
    this.reading = { newest, at: now, reports };
    return reports;
  }
}

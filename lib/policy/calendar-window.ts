import { DAY_MS, instantAt, wallAt, wallMs, zoneFormatter } from './time-zone.js';
import { configError } from './validation.js';

/** The calendar units a window can follow. */
export type CalendarUnit = 'day' | 'week' | 'month';

/**
 * Windows that follow the calendar in a time zone: days, weeks starting on Monday, or months,
 * each starting at the anchor's local time of day (and weekday, or day of the month, clamped to
 * the month's last day), midnight without one. Their lengths vary: a day of 23 or 25 hours, a
 * month of 28 to 31 days.
 */
export interface CalendarWindow {
  readonly unit: CalendarUnit;
  /** An IANA time zone name, e.g. `'Europe/Berlin'`. */
  readonly timeZone: string;
  /** The anchor, ms since the epoch; undefined for the unit's natural start. */
  readonly anchorMs: number | undefined;
  /**
   * Six consecutive window starts in µs, ascending: the window that holds `nowUs` is
   * `[b[2], b[3])`, `b[0]` and `b[1]` start the two before it, `b[4]` and `b[5]` end the next two.
   * A store whose clock differs a little from the caller's picks the window that holds its own
   * now, among `[b[1], b[4])`, and still knows the window before it and the one after. The same
   * array is returned while `nowUs` stays in `[b[2], b[3])`, so callers may cache by identity.
   */
  bounds(nowUs: number): readonly number[];
}

const HOUR_MS = 3_600_000;
const WEEK_MS = 7 * DAY_MS;

/**
 * The longest window of each unit, in ms: a zone moves its clocks by up to two hours
 * (Antarctica/Troll goes from +00 to +02), so a day lasts up to 26 hours.
 */
export const CALENDAR_PERIOD_MS: Record<CalendarUnit, number> = {
  day: DAY_MS + 2 * HOUR_MS,
  week: WEEK_MS + 2 * HOUR_MS,
  month: 31 * DAY_MS + 2 * HOUR_MS,
};

/** Where windows start, in wall ms: window `index`'s start, and the index of one near a wall time. */
interface StartRule {
  wallOf(index: number): number;
  indexNear(wall: number): number;
}

function startRule(unit: CalendarUnit, anchorWall: number | undefined): StartRule {
  const time = anchorWall === undefined ? 0 : anchorWall - Math.floor(anchorWall / DAY_MS) * DAY_MS;
  const anchor = anchorWall === undefined ? undefined : new Date(anchorWall);
  switch (unit) {
    case 'day':
      return {
        wallOf: (index) => index * DAY_MS + time,
        indexNear: (wall) => Math.floor((wall - time) / DAY_MS),
      };
    case 'week': {
      // Day -3 of the epoch, 1969-12-29, was a Monday; the anchor moves starts to its weekday.
      const fromMonday = anchor === undefined ? 0 : (anchor.getUTCDay() + 6) % 7;
      const first = (fromMonday - 3) * DAY_MS + time;
      return {
        wallOf: (index) => index * WEEK_MS + first,
        indexNear: (wall) => Math.floor((wall - first) / WEEK_MS),
      };
    }
    case 'month': {
      const day = anchor === undefined ? 1 : anchor.getUTCDate();
      return {
        wallOf(index) {
          // Clamped from the anchor's own day each month: after Feb 28, Mar 31 again.
          const first = Date.UTC(1970, index, 1);
          const days = (Date.UTC(1970, index + 1, 1) - first) / DAY_MS;
          return first + (Math.min(day, days) - 1) * DAY_MS + time;
        },
        indexNear(wall) {
          const date = new Date(wall);
          return (date.getUTCFullYear() - 1970) * 12 + date.getUTCMonth();
        },
      };
    }
  }
}

class ZoneCalendarWindow implements CalendarWindow {
  private readonly rule: StartRule;
  // The window `last` holds, in µs; empty until the first call.
  private from = Infinity;
  private until = -Infinity;
  private last: readonly number[] = [];

  constructor(
    readonly unit: CalendarUnit,
    readonly timeZone: string,
    readonly anchorMs: number | undefined,
  ) {
    zoneFormatter(timeZone); // an unknown zone throws here, not on a request
    // Here too, not only in parseAnchor: no window could be computed from such an anchor, and a
    // store call that failed for it would be taken for a failing store.
    if (anchorMs !== undefined) checkAnchorRange(anchorMs, 'calendarWindow');
    this.rule = startRule(unit, anchorMs === undefined ? undefined : wallAt(timeZone, anchorMs));
  }

  bounds(nowUs: number): readonly number[] {
    if (nowUs >= this.from && nowUs < this.until) return this.last;
    return this.recompute(nowUs);
  }

  private recompute(nowUs: number): readonly number[] {
    if (!Number.isFinite(nowUs)) throw new RangeError(`now must be finite µs, got ${nowUs}`);
    // nowUs < ms * 1000 exactly when floor(nowUs / 1000) < ms, for the whole ms starts are.
    const now = Math.floor(nowUs / 1000);
    const starts = new Map<number, number>();
    const start = (index: number): number => {
      let ms = starts.get(index);
      if (ms === undefined) {
        ms = instantAt(this.timeZone, this.rule.wallOf(index));
        starts.set(index, ms);
      }
      return ms;
    };
    // The wall time gives the window to a step or two: offsets and gaps move starts by hours.
    let index = this.rule.indexNear(wallAt(this.timeZone, now));
    while (start(index) > now) index--;
    while (start(index + 1) <= now) index++;
    const b2 = start(index);
    const b3 = start(index + 1);
    // A day a zone skips whole (Pacific/Apia, 2011-12-30) starts where the next does: skip it.
    let after = index + 2;
    while (start(after) <= b3) after++;
    let before = index - 1;
    while (start(before) >= b2) before--;
    const b1 = start(before);
    while (start(before) >= b1) before--;
    const b4 = start(after);
    let later = after + 1;
    while (start(later) <= b4) later++;
    const b0 = start(before);
    this.last = Object.freeze([b0, b1, b2, b3, b4, start(later)].map((ms) => ms * 1000));
    this.from = b2 * 1000;
    this.until = b3 * 1000;
    return this.last;
  }
}

// By unit and zone (a few, from the policies), then by anchor, which may come per customer: a
// bounded number, so that a route keeps many customers' bounds cached without growing forever.
const MAX_ANCHORS = 10_000;
const cached = new Map<string, Map<number | undefined, CalendarWindow>>();

/**
 * The calendar windows of `unit` in `timeZone`, starting at `anchorMs`'s local time (and weekday,
 * or day of the month), at midnight without one. Instances are shared: the same arguments give
 * the same object while it stays among the last 10,000 anchors made for its unit and zone, so a
 * route whose anchor depends on the request keeps each customer's bounds cached. `timeZone` must
 * be one `Intl` knows (see {@link checkTimeZone}), else it throws a `RangeError`; an anchor outside
 * {@link ANCHOR_RANGE} throws a `RateLimitConfigError`.
 *
 * @example
 * ```ts
 * // billing months from the day and hour a customer signed up, in their zone
 * const month = calendarWindow('month', 'Europe/Berlin', Date.parse('2026-01-31T09:00:00+01:00'));
 * const [, , from, until] = month.bounds(Date.now() * 1000);
 * // in March 2026: from Feb 28 to Mar 31, 09:00 Berlin time
 * ```
 */
export function calendarWindow(
  unit: CalendarUnit,
  timeZone: string,
  anchorMs?: number,
): CalendarWindow {
  const byAnchor = cached.get(unit + timeZone);
  let window = byAnchor?.get(anchorMs);
  if (!window) {
    window = new ZoneCalendarWindow(unit, timeZone, anchorMs);
    if (!byAnchor) {
      cached.set(unit + timeZone, new Map([[anchorMs, window]]));
    } else {
      // The oldest goes first; one still in use is made again, once.
      if (byAnchor.size >= MAX_ANCHORS) byAnchor.delete(byAnchor.keys().next().value);
      byAnchor.set(anchorMs, window);
    }
  }
  return window;
}

const UNITS: readonly unknown[] = ['day', 'week', 'month'] satisfies CalendarUnit[];

/** Checks a policy's `calendar`: `'day'`, `'week'` or `'month'`. */
export function checkCalendar(value: unknown, where: string): CalendarUnit {
  if (!UNITS.includes(value)) {
    throw configError(where, 'calendar', value, "'day', 'week' or 'month'");
  }
  return value as CalendarUnit;
}

/**
 * Checks a policy's `timeZone`, an IANA name `Intl` knows, and returns its canonical spelling.
 *
 * @example
 * ```ts
 * checkTimeZone('europe/berlin', '@RateLimit on Api.call'); // 'Europe/Berlin'
 * ```
 */
export function checkTimeZone(value: unknown, where: string): string {
  if (typeof value === 'string' && value !== '') {
    try {
      return zoneFormatter(value).resolvedOptions().timeZone;
    } catch {
      // not a zone Intl knows: said below
    }
  }
  throw configError(where, 'timeZone', value, "an IANA time zone name such as 'Europe/Berlin'");
}

/**
 * The anchors a calendar can start its windows from, in ms since the epoch: the years 1 to 9999
 * in UTC, about those an ISO string names. Near the ends of `Date`'s own range (±100,000,000
 * days) an anchor's wall time in a zone hours away is no date at all, and no window could be
 * computed from it.
 */
export const ANCHOR_RANGE = {
  minMs: wallMs(1, 1, 1),
  maxMs: wallMs(10_000, 1, 1) - 1,
} as const;
const ISO_DATE =
  /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?(Z|([+-])(\d{2}):?(\d{2}))?$/i;

/**
 * Parses a policy's `anchor` into ms since the epoch: a `Date`, ms since the epoch, or an ISO 8601
 * string. A string without an offset names a wall time in `timeZone` (the policy's zone, checked
 * first with {@link checkTimeZone}), not in the server's.
 *
 * @example
 * ```ts
 * parseAnchor('2026-01-31T09:00', where, 'Europe/Berlin'); // Date.parse('2026-01-31T08:00Z')
 * parseAnchor('2026-01-31T09:00+01:00', where);            // the same instant
 * ```
 */
export function parseAnchor(value: unknown, where: string, timeZone = 'UTC'): number {
  let ms = NaN;
  if (value instanceof Date) ms = value.getTime();
  else if (typeof value === 'number') ms = value;
  else if (typeof value === 'string') ms = parseIsoDate(value.trim(), timeZone);
  if (!Number.isSafeInteger(ms)) {
    const shown = value instanceof Date ? String(value) : value;
    throw configError(where, 'anchor', shown, 'a Date, an ISO date string or ms since the epoch');
  }
  return checkAnchorRange(ms, where, value);
}

/**
 * `ms` if it lies in {@link ANCHOR_RANGE}; else throws naming the range and `value`, the anchor as
 * given (a `Date` shown as its ISO string).
 */
function checkAnchorRange(ms: number, where: string, value: unknown = ms): number {
  if (ms >= ANCHOR_RANGE.minMs && ms <= ANCHOR_RANGE.maxMs) return ms;
  const shown = value instanceof Date && Number.isFinite(ms) ? value.toISOString() : value;
  const [from, to] = [ANCHOR_RANGE.minMs, ANCHOR_RANGE.maxMs].map((m) => new Date(m).toISOString());
  throw configError(where, 'anchor', shown, `a date between ${from} and ${to}`);
}

/** An ISO 8601 date, with or without a time and an offset, in ms; NaN if it is not one. */
function parseIsoDate(text: string, timeZone: string): number {
  const match = ISO_DATE.exec(text);
  if (!match) return NaN;
  const [year, month, day, hour, minute, second] = match
    .slice(1, 7)
    .map((part) => Number(part ?? 0));
  const fraction = Number((match[7] ?? '').padEnd(3, '0').slice(0, 3));
  if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59) return NaN;
  const wall = wallMs(year, month, day, ((hour * 60 + minute) * 60 + second) * 1000 + fraction);
  // `Date` rolls Feb 30 over into March; a date that did so was not one.
  if (day < 1 || new Date(wall).getUTCDate() !== day) return NaN;
  if (match[8] === undefined) return instantAt(timeZone, wall);
  if (match[9] === undefined) return wall; // Z
  const [offsetHours, offsetMinutes] = [Number(match[10]), Number(match[11])];
  if (offsetHours > 23 || offsetMinutes > 59) return NaN;
  const offset = (offsetHours * 60 + offsetMinutes) * 60_000;
  return match[9] === '-' ? wall + offset : wall - offset;
}

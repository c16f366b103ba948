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
   * Five consecutive window starts in µs, ascending: the window that holds `nowUs` is
   * `[b[2], b[3])`, `b[0]` and `b[1]` start the two before it, `b[4]` ends the next. A store whose
   * clock differs a little from the caller's picks the window that holds its own now. The same
   * array is returned while `nowUs` stays in `[b[2], b[3])`, so callers may cache by identity.
   */
  bounds(nowUs: number): readonly number[];
}

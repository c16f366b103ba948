/**
 * Calendar windows at random instants from 2000 to 2100, in zones that move their clocks by an
 * hour, half an hour, at midnight, or never, with and without random anchors. Each bound is
 * checked against local times read from `Intl` directly: it is the start the unit and the anchor
 * name, or, where the clocks skip that time, the instant just after the skip.
 */
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { type CalendarUnit, calendarWindow } from '../../lib/policy/calendar-window.js';
import { DAY, HOUR, localTime, offset } from '../support/local-time.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 500);

const ZONES = [
  'UTC',
  'Europe/Berlin',
  'Europe/London',
  'America/New_York',
  'America/St_Johns', // -03:30
  'America/Havana', // moves its clocks at midnight
  'America/Santiago', // at midnight too, going forward
  'Australia/Lord_Howe', // by half an hour
  'Australia/Sydney',
  'Asia/Kathmandu', // +05:45, no summer time
  'Asia/Tokyo',
  'Pacific/Chatham', // +12:45 and +13:45
];

const LENGTHS: Record<CalendarUnit, [number, number]> = {
  day: [23 * HOUR, 25 * HOUR],
  week: [7 * DAY - HOUR, 7 * DAY + HOUR],
  month: [28 * DAY - HOUR, 31 * DAY + HOUR],
};

const instant = fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2100, 0, 1) - 1 });
// Half the nows fall in the months clocks change in, March, April and September to November.
const now = fc.oneof(
  instant,
  fc
    .tuple(
      fc.integer({ min: 2000, max: 2099 }),
      fc.constantFrom(2, 3, 8, 9, 10),
      fc.integer({ min: 0, max: 31 * DAY - 1 }),
    )
    .map(([year, month, after]) => Date.UTC(year, month, 1) + after),
);
// Half the anchors start windows at a local time some zone skips or repeats.
const anchorTime = fc.oneof(
  fc.constantFrom(0, 0.5, 1, 1.5, 2, 2.25, 2.5, 2.75, 3).map((hours) => hours * HOUR),
  fc.integer({ min: 0, max: DAY - 1 }),
);
const anchor = fc.option(fc.tuple(instant, anchorTime), { nil: undefined });

/** What every start of a window repeats: a time of day, and a weekday or a day of the month. */
interface Rule {
  unit: CalendarUnit;
  timeOfDay: number;
  weekday: number;
  dayOfMonth: number;
}

function ruleOf(unit: CalendarUnit, zone: string, anchorMs: number | undefined): Rule {
  if (anchorMs === undefined) return { unit, timeOfDay: 0, weekday: 0, dayOfMonth: 1 };
  const anchor = localTime(zone, anchorMs);
  const date = new Date(anchor.wall);
  return {
    unit,
    timeOfDay: anchor.wall % DAY,
    weekday: anchor.weekday,
    dayOfMonth: date.getUTCDate(),
  };
}

/** Whether wall time `wall` (local fields as a UTC instant) starts a window under `rule`. */
function starts(rule: Rule, wall: number): boolean {
  if (((wall % DAY) + DAY) % DAY !== rule.timeOfDay) return false;
  const date = new Date(wall);
  if (rule.unit === 'week') return (date.getUTCDay() + 6) % 7 === rule.weekday;
  if (rule.unit === 'month') {
    const last = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 0)).getUTCDate();
    return date.getUTCDate() === Math.min(rule.dayOfMonth, last);
  }
  return true;
}

/** The instants whose local time in `zone` is `wall`, among the offsets in use around `near`. */
function instantsShowing(zone: string, wall: number, near: number): number[] {
  const offsets = new Set([offset(zone, near - 12 * HOUR), offset(zone, near + 12 * HOUR)]);
  return [...offsets].map((o) => wall - o).filter((ms) => localTime(zone, ms).wall === wall);
}

/**
 * The wall time the start `ms` stands for: its own local time when that starts a window (and
 * `ms` is the earlier of two instants showing it), else the local time the clocks skipped to
 * reach it, which must start a window and exist at no instant.
 */
function intendedStart(rule: Rule, zone: string, ms: number): number {
  const shown = localTime(zone, ms).wall;
  if (starts(rule, shown)) {
    expect(Math.min(...instantsShowing(zone, shown, ms))).toBe(ms);
    return shown;
  }
  const skipped = offset(zone, ms) - offset(zone, ms - 12 * HOUR);
  const intended = shown - skipped;
  expect(skipped).toBeGreaterThan(0);
  expect(starts(rule, intended)).toBe(true);
  expect(instantsShowing(zone, intended, ms)).toEqual([]);
  return intended;
}

/** Whether window starts `from` and `to` (wall times) are consecutive under `rule`. */
function consecutive(rule: Rule, from: number, to: number): boolean {
  if (rule.unit === 'day') return to - from === DAY;
  if (rule.unit === 'week') return to - from === 7 * DAY;
  const [a, b] = [new Date(from), new Date(to)];
  const months = (date: Date) => date.getUTCFullYear() * 12 + date.getUTCMonth();
  return months(b) - months(a) === 1;
}

describe('calendar windows at random instants', () => {
  it('are consecutive starts the unit and the anchor name, around now, of plausible lengths', () => {
    fc.assert(
      fc.property(
        now,
        fc.integer({ min: 0, max: 999 }),
        fc.constantFrom(...ZONES),
        fc.constantFrom<CalendarUnit>('day', 'week', 'month'),
        anchor,
        (nowMs, extraUs, zone, unit, anchorAt) => {
          const nowUs = nowMs * 1000 + extraUs;
          // The anchor's local time is about `time` on its day: exactly, unless the clocks moved.
          const anchorWall = anchorAt && anchorAt[0] - (anchorAt[0] % DAY) + anchorAt[1];
          const anchorMs = anchorWall && anchorWall - offset(zone, anchorWall);
          const bounds = calendarWindow(unit, zone, anchorMs).bounds(nowUs);
          expect(bounds).toHaveLength(6);
          expect(bounds[2]).toBeLessThanOrEqual(nowUs);
          expect(nowUs).toBeLessThan(bounds[3]);
          const ms = bounds.map((us) => us / 1000);
          for (const start of ms) expect(Number.isInteger(start)).toBe(true);
          const rule = ruleOf(unit, zone, anchorMs);
          const intended = ms.map((start) => intendedStart(rule, zone, start));
          const [shortest, longest] = LENGTHS[unit];
          for (let i = 0; i < 4; i++) {
            expect(consecutive(rule, intended[i], intended[i + 1])).toBe(true);
            expect(ms[i + 1] - ms[i]).toBeGreaterThanOrEqual(shortest);
            expect(ms[i + 1] - ms[i]).toBeLessThanOrEqual(longest);
          }
        },
      ),
      { numRuns: RUNS },
    );
  });
});

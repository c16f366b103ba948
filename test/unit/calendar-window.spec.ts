/**
 * Calendar windows by example: month lengths, days that daylight saving time shortens or
 * lengthens (by an hour, half an hour, or at midnight), anchors, and the bounds array callers
 * cache by identity. Random instants in many zones are in test/property/calendar-window.spec.ts.
 */
import { describe, expect, it } from '@jest/globals';
import {
  CALENDAR_PERIOD_MS,
  type CalendarUnit,
  calendarWindow,
} from '../../lib/policy/calendar-window.js';
import { RateLimitConfigError } from '../../lib/policy/validation.js';
import { DAY, HOUR, instantOf, localTime } from '../support/local-time.js';

/**
 * The first five bounds, in ms, of the window holding local time `now` in `zone`: the four
 * windows around it. (The sixth ends the one after; see 'returns the same array'.)
 */
function boundsAt(unit: CalendarUnit, zone: string, now: string, anchor?: string): number[] {
  const anchorMs = anchor === undefined ? undefined : instantOf(zone, anchor);
  return calendarWindow(unit, zone, anchorMs)
    .bounds(instantOf(zone, now) * 1000)
    .slice(0, 5)
    .map((us) => us / 1000);
}

/** The bounds as local times, without the seconds when they are zero. */
function localBounds(unit: CalendarUnit, zone: string, now: string, anchor?: string): string[] {
  return boundsAt(unit, zone, now, anchor).map((ms) =>
    localTime(zone, ms).iso.replace(/:00\.000$/, ''),
  );
}

/** The lengths of the four windows the bounds delimit, in hours. */
function hours(bounds: number[]): number[] {
  return bounds.slice(1).map((end, i) => (end - bounds[i]) / HOUR);
}

describe('calendar months', () => {
  it.each(['UTC', 'America/New_York'])(
    'start on the 1st at midnight in %s, 28 to 31 days',
    (zone) => {
      expect(localBounds('month', zone, '2027-02-10T12:00')).toEqual([
        '2026-12-01T00:00',
        '2027-01-01T00:00',
        '2027-02-01T00:00',
        '2027-03-01T00:00',
        '2027-04-01T00:00',
      ]);
      const days = (ms: number[]) => ms.slice(1).map((end, i) => Math.round((end - ms[i]) / DAY));
      expect(days(boundsAt('month', zone, '2027-02-10T12:00'))).toEqual([31, 31, 28, 31]);
      expect(days(boundsAt('month', zone, '2028-02-10T12:00'))).toEqual([31, 31, 29, 31]);
      expect(days(boundsAt('month', zone, '2026-04-30T23:59'))).toEqual([28, 31, 30, 31]);
    },
  );

  it('lose the hour daylight saving time skips in March: 31 days less an hour', () => {
    expect(hours(boundsAt('month', 'America/New_York', '2026-03-08T12:00'))[2]).toBe(31 * 24 - 1);
    expect(hours(boundsAt('month', 'UTC', '2026-03-08T12:00'))[2]).toBe(31 * 24);
  });
});

describe('calendar days and weeks across daylight saving time', () => {
  it.each([
    ['Europe/Berlin', '2026-03-29', 23],
    ['Europe/Berlin', '2026-10-25', 25],
    ['America/New_York', '2026-03-08', 23],
    ['America/New_York', '2026-11-01', 25],
    ['Australia/Lord_Howe', '2026-04-05', 24.5],
    ['Australia/Lord_Howe', '2026-10-04', 23.5],
    ['Antarctica/Troll', '2026-03-29', 22],
    ['Antarctica/Troll', '2026-10-25', 26],
  ])('in %s, the day of %s lasts %p hours from midnight', (zone, date, length) => {
    const bounds = boundsAt('day', zone, `${date}T12:00`);
    expect(localTime(zone, bounds[2]).iso).toBe(`${date}T00:00:00.000`);
    expect(hours(bounds)).toEqual([24, 24, length, 24]);
    expect(length * HOUR).toBeLessThanOrEqual(CALENDAR_PERIOD_MS.day);
  });

  // Havana moves its clocks at midnight: on 2026-03-08, 00:00 becomes 01:00, and on 2026-11-01
  // 01:00 goes back to 00:00.
  it('start a day whose midnight a zone skips at the first instant after the gap', () => {
    const bounds = boundsAt('day', 'America/Havana', '2026-03-08T12:00');
    expect(localTime('America/Havana', bounds[2]).iso).toBe('2026-03-08T01:00:00.000');
    expect(localTime('America/Havana', bounds[2] - 1).iso).toBe('2026-03-07T23:59:59.999');
    expect(hours(bounds)).toEqual([24, 24, 23, 24]);
  });

  it('start a day whose midnight a zone repeats at the first one', () => {
    const bounds = boundsAt('day', 'America/Havana', '2026-11-01T12:00');
    expect(new Date(bounds[2]).toISOString()).toBe('2026-11-01T04:00:00.000Z'); // at -04:00
    expect(localTime('America/Havana', bounds[2] + HOUR).iso).toBe('2026-11-01T00:00:00.000');
    expect(hours(bounds)).toEqual([24, 24, 25, 24]);
  });

  it('start at local midnight in a zone 5:45 ahead of UTC', () => {
    const bounds = boundsAt('day', 'Asia/Kathmandu', '2026-01-15T00:10');
    expect(new Date(bounds[2]).toISOString()).toBe('2026-01-14T18:15:00.000Z');
    expect(hours(bounds)).toEqual([24, 24, 24, 24]);
  });

  it('skip a day the zone skipped whole: Samoa went from 2011-12-29 to 2011-12-31', () => {
    const bounds = boundsAt('day', 'Pacific/Apia', '2011-12-29T12:00');
    expect(bounds.map((ms) => localTime('Pacific/Apia', ms).iso.slice(0, 10))).toEqual([
      '2011-12-27',
      '2011-12-28',
      '2011-12-29',
      '2011-12-31',
      '2012-01-01',
    ]);
    expect(hours(bounds)).toEqual([24, 24, 24, 24]);
  });

  it('start weeks on Monday at midnight, an hour short over the change to summer time', () => {
    expect(localBounds('week', 'Europe/Berlin', '2026-03-29T12:00')).toEqual([
      '2026-03-09T00:00',
      '2026-03-16T00:00',
      '2026-03-23T00:00',
      '2026-03-30T00:00',
      '2026-04-06T00:00',
    ]);
    expect(hours(boundsAt('week', 'Europe/Berlin', '2026-03-29T12:00'))).toEqual([
      168, 168, 167, 168,
    ]);
    expect(localBounds('week', 'UTC', '2026-03-30T00:00')[2]).toBe('2026-03-30T00:00');
  });
});

describe('anchored calendar windows', () => {
  /** Successive window starts from the window holding `from`, as local dates and times. */
  function starts(unit: CalendarUnit, zone: string, anchor: string, from: string, count: number) {
    const window = calendarWindow(unit, zone, instantOf(zone, anchor));
    const found: string[] = [];
    let now = instantOf(zone, from) * 1000;
    for (let i = 0; i < count; i++) {
      const bounds = window.bounds(now);
      found.push(localTime(zone, bounds[2] / 1000).iso.slice(0, 16));
      now = bounds[3];
    }
    return found;
  }

  it.each([
    ['2026-01-31', '2027-01-31T09:00', ['01-31', '02-28', '03-31', '04-30', '05-31']],
    ['2028-01-31', '2027-01-31T09:00', ['01-31', '02-29', '03-31', '04-30', '05-31']],
    ['2027-01-30', '2026-01-30T09:00', ['01-30', '02-28', '03-30', '04-30', '05-30']],
    ['2028-01-30', '2026-01-30T09:00', ['01-30', '02-29', '03-30', '04-30', '05-30']],
    ['2027-01-29', '2026-01-29T09:00', ['01-29', '02-28', '03-29', '04-29', '05-29']],
    ['2028-01-29', '2026-01-29T09:00', ['01-29', '02-29', '03-29', '04-29', '05-29']],
  ])('from %s, an anchor of %s starts months on %p', (from, anchor, days) => {
    for (const zone of ['UTC', 'Europe/Berlin']) {
      const year = from.slice(0, 4);
      const expected = days.map((day) => `${year}-${day}T09:00`);
      expect(starts('month', zone, anchor, `${from}T12:00`, 5)).toEqual(expected);
    }
  });

  it("takes the anchor's day of the month in the zone, not in UTC", () => {
    // 2026-01-31T00:30 in Berlin is still the 30th in UTC.
    expect(starts('month', 'Europe/Berlin', '2026-01-31T00:30', '2026-02-15T12:00', 3)).toEqual([
      '2026-01-31T00:30',
      '2026-02-28T00:30',
      '2026-03-31T00:30',
    ]);
  });

  it("starts weeks on the anchor's weekday and time: Wednesday 09:00", () => {
    // 2026-01-07 is a Wednesday; 2026-03-01 a Sunday, in the week from Wednesday 25 February.
    expect(localBounds('week', 'Europe/Berlin', '2026-03-01T12:00', '2026-01-07T09:00')).toEqual([
      '2026-02-11T09:00',
      '2026-02-18T09:00',
      '2026-02-25T09:00',
      '2026-03-04T09:00',
      '2026-03-11T09:00',
    ]);
    expect(localBounds('week', 'Europe/Berlin', '2026-03-04T08:59', '2026-01-07T09:00')[3]).toBe(
      '2026-03-04T09:00',
    );
  });

  it("starts days at the anchor's local time to the millisecond: 17:30:15.250", () => {
    const anchor = '2026-05-01T17:30:15.250';
    const bounds = boundsAt('day', 'America/New_York', '2026-03-08T12:00', anchor);
    expect(bounds.map((ms) => localTime('America/New_York', ms).iso)).toEqual([
      '2026-03-05T17:30:15.250',
      '2026-03-06T17:30:15.250',
      '2026-03-07T17:30:15.250',
      '2026-03-08T17:30:15.250',
      '2026-03-09T17:30:15.250',
    ]);
    expect(hours(bounds)).toEqual([24, 24, 23, 24]);
  });

  it('starts at a time of day the clocks skip an hour later, and at the first of two repeated', () => {
    const skipped = localBounds('day', 'Europe/Berlin', '2026-03-29T12:00', '2026-01-07T02:30');
    expect(skipped.slice(1, 4)).toEqual([
      '2026-03-28T02:30',
      '2026-03-29T03:30',
      '2026-03-30T02:30',
    ]);
    const repeated = boundsAt('day', 'Europe/Berlin', '2026-10-25T12:00', '2026-01-07T02:30');
    expect(new Date(repeated[2]).toISOString()).toBe('2026-10-25T00:30:00.000Z'); // at +02:00
    expect(hours(repeated)).toEqual([24, 24, 25, 24]);
  });
});

describe('CalendarWindow.bounds', () => {
  const window = calendarWindow('day', 'Europe/Berlin');
  const noon = instantOf('Europe/Berlin', '2026-03-29T12:00') * 1000;

  it('returns the same array while now stays in the window, a new one from its end', () => {
    const bounds = window.bounds(noon);
    expect(bounds[2]).toBeLessThanOrEqual(noon);
    expect(window.bounds(bounds[2])).toBe(bounds);
    expect(window.bounds(bounds[3] - 0.5)).toBe(bounds);
    const next = window.bounds(bounds[3]);
    expect(next).not.toBe(bounds);
    expect(bounds).toHaveLength(6);
    expect(next.slice(0, 5)).toEqual(bounds.slice(1));
    expect(next[5] - next[4]).toBe(DAY * 1000);
    expect(window.bounds(bounds[2] - 1)).toEqual([bounds[0] - DAY * 1000, ...bounds.slice(0, 5)]);
  });

  it('are shared by the same unit, zone and anchor', () => {
    expect(calendarWindow('day', 'Europe/Berlin')).toBe(window);
    expect(calendarWindow('day', 'Europe/Berlin', 0)).toBe(
      calendarWindow('day', 'Europe/Berlin', 0),
    );
    expect(calendarWindow('day', 'Europe/Berlin', 0)).not.toBe(window);
    expect(calendarWindow('week', 'Europe/Berlin')).not.toBe(window);
  });

  it('are forgotten, oldest first, past 10,000 anchors for one unit and zone', () => {
    const first = calendarWindow('day', 'Asia/Tokyo', 0);
    for (let anchor = 1; anchor < 10_000; anchor++) calendarWindow('day', 'Asia/Tokyo', anchor);
    expect(calendarWindow('day', 'Asia/Tokyo', 0)).toBe(first);
    calendarWindow('day', 'Asia/Tokyo', 10_000);
    expect(calendarWindow('day', 'Asia/Tokyo', 1)).toBe(calendarWindow('day', 'Asia/Tokyo', 1));
    expect(calendarWindow('day', 'Asia/Tokyo', 0)).not.toBe(first);
  });

  it('refuses a zone Intl does not know, an anchor or a now that is not a number', () => {
    expect(() => calendarWindow('day', 'Mars/Olympus_Mons')).toThrow(RangeError);
    expect(() => calendarWindow('day', 'UTC', NaN)).toThrow(RateLimitConfigError);
    expect(() => calendarWindow('month', 'UTC').bounds(NaN)).toThrow(RangeError);
  });
});

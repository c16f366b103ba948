/** The checks a calendar policy's fields pass when it is resolved: calendar, timeZone, anchor. */
import { describe, expect, it } from '@jest/globals';
import {
  ANCHOR_RANGE,
  calendarWindow,
  checkCalendar,
  checkTimeZone,
  parseAnchor,
} from '../../lib/policy/calendar-window.js';
import { RateLimitConfigError } from '../../lib/policy/validation.js';

const where = '@RateLimit on X.m';

/** The error `check` throws, which must be a RateLimitConfigError. */
function errorOf(check: () => unknown): Error {
  try {
    check();
  } catch (error) {
    expect(error).toBeInstanceOf(RateLimitConfigError);
    return error as Error;
  }
  throw new Error('no error thrown');
}

describe('checkCalendar', () => {
  it.each(['day', 'week', 'month'])('accepts %p', (unit) => {
    expect(checkCalendar(unit, where)).toBe(unit);
  });

  it.each([
    ['year', '"year"'],
    ['Day', '"Day"'],
    [1, '1'],
    [undefined, 'undefined'],
  ])('rejects %p, naming the field and the value', (value, shown) => {
    expect(errorOf(() => checkCalendar(value, where)).message).toBe(
      `${where}: calendar must be 'day', 'week' or 'month', got ${shown}`,
    );
  });
});

describe('checkTimeZone', () => {
  it.each([
    ['Europe/Berlin', 'Europe/Berlin'],
    ['europe/berlin', 'Europe/Berlin'],
    ['UTC', 'UTC'],
    ['utc', 'UTC'],
  ])('accepts %p as %p', (value, canonical) => {
    expect(checkTimeZone(value, where)).toBe(canonical);
  });

  // Node 20's ICU spells it the older way; engines that keep the name given do not.
  it('accepts a name the engine may spell its own way', () => {
    expect(checkTimeZone('Asia/Kathmandu', where)).toMatch(/^Asia\/Kath?mandu$/);
  });

  it.each([
    ['Mars/Olympus_Mons', '"Mars/Olympus_Mons"'],
    ['', '""'],
    [42, '42'],
    [null, 'null'],
  ])('rejects %p, naming the field and the value', (value, shown) => {
    expect(errorOf(() => checkTimeZone(value, where)).message).toBe(
      `${where}: timeZone must be an IANA time zone name such as 'Europe/Berlin', got ${shown}`,
    );
  });
});

describe('parseAnchor', () => {
  const instant = Date.UTC(2026, 0, 31, 8, 0, 0);

  it.each([
    ['a Date', new Date(instant), undefined, instant],
    ['ms since the epoch', instant, undefined, instant],
    ['an ISO string in UTC', '2026-01-31T08:00:00.000Z', undefined, instant],
    ['an ISO string with an offset', '2026-01-31T09:00+01:00', undefined, instant],
    ['an ISO string with a negative offset', '2026-01-31T03:00:00-0500', undefined, instant],
    ['a local time, in the zone given', '2026-01-31T09:00', 'Europe/Berlin', instant],
    ['a local time, in UTC without a zone', '2026-01-31T08:00', undefined, instant],
    [
      'a date, at midnight in the zone',
      '2026-01-31',
      'Asia/Kathmandu',
      instant - 13.75 * 3_600_000,
    ],
    ['fractions of a second, to the ms', '2026-01-31T08:00:00.1239Z', undefined, instant + 123],
  ])('accepts %s', (_, value, timeZone, ms) => {
    expect(parseAnchor(value, where, timeZone)).toBe(ms);
  });

  it('reads a local time the clocks skip as the time after the skip', () => {
    expect(parseAnchor('2026-03-29T02:30', where, 'Europe/Berlin')).toBe(
      Date.parse('2026-03-29T03:30+02:00'),
    );
  });

  it.each([
    ['yesterday', '"yesterday"'],
    ['2026-02-30', '"2026-02-30"'],
    ['2026-13-01', '"2026-13-01"'],
    ['2026-01-31T24:00', '"2026-01-31T24:00"'],
    ['2026-01-31T09:00+25:00', '"2026-01-31T09:00+25:00"'],
    ['Sat, 31 Jan 2026 09:00:00', '"Sat, 31 Jan 2026 09:00:00"'],
    [new Date(NaN), '"Invalid Date"'],
    [NaN, 'NaN'],
    [1.5, '1.5'],
    [{}, '{}'],
  ])('rejects %p, naming the field and the value', (value, shown) => {
    expect(errorOf(() => parseAnchor(value, where)).message).toBe(
      `${where}: anchor must be a Date, an ISO date string or ms since the epoch, got ${shown}`,
    );
  });
});

describe('the range of anchors', () => {
  const range = 'a date between 0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z';
  const { minMs, maxMs } = ANCHOR_RANGE;

  it.each([
    ['the first instant of the range', minMs, 'UTC'],
    ['the last instant of the range', maxMs, 'UTC'],
    ['the first, as an ISO string', '0001-01-01T00:00Z', 'UTC'],
    ['the last, as an ISO string', '9999-12-31T23:59:59.999Z', 'UTC'],
  ])('accepts %s', (_, value, timeZone) => {
    expect(parseAnchor(value, where, timeZone)).toBeGreaterThanOrEqual(minMs);
  });

  it.each([
    ['the first Date', new Date(-8.64e15), '"-271821-04-20T00:00:00.000Z"'],
    ['the last Date', new Date(8.64e15), '"+275760-09-13T00:00:00.000Z"'],
    ['a ms before the range', minMs - 1, String(minMs - 1)],
    ['a ms after the range', maxMs + 1, String(maxMs + 1)],
    ['ms past the end of Date', 9e15, '9000000000000000'],
    ['a date of year 0', '0000-06-01', '"0000-06-01"'],
    // The first day of the range as Tokyo's wall time: hours before the range in UTC.
    ['a local time whose instant is before the range', '0001-01-01T00:00', '"0001-01-01T00:00"'],
  ])('rejects %s, naming the range and the value', (_, value, shown) => {
    expect(errorOf(() => parseAnchor(value, where, 'Asia/Tokyo')).message).toBe(
      `${where}: anchor must be ${range}, got ${shown}`,
    );
  });

  it.each(['day', 'week', 'month'] as const)(
    'computes %s windows from either end of the range, in zones far from UTC',
    (unit) => {
      const now = Date.UTC(2026, 6, 15, 12) * 1000;
      for (const zone of ['Pacific/Kiritimati', 'Pacific/Pago_Pago', 'America/New_York']) {
        for (const anchor of [minMs, maxMs]) {
          const bounds = calendarWindow(unit, zone, anchor).bounds(now);
          expect(bounds.every(Number.isFinite)).toBe(true);
          expect(bounds[2]).toBeLessThanOrEqual(now);
          expect(bounds[3]).toBeGreaterThan(now);
        }
      }
    },
  );

  it('refuses an anchor outside the range where windows are made, before any is computed', () => {
    expect(errorOf(() => calendarWindow('month', 'America/New_York', -8.64e15)).message).toBe(
      `calendarWindow: anchor must be ${range}, got -8640000000000000`,
    );
  });
});

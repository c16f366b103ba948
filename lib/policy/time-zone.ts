/**
 * Wall-clock time in an IANA time zone, to and from instants, through `Intl` alone. A wall time is
 * carried as "wall ms": the UTC instant whose UTC fields are the local fields, so the `Date` UTC
 * getters and plain arithmetic on days work on it.
 */

export const DAY_MS = 86_400_000;

// One formatter per zone: building one costs far more than formatting with it.
const formatters = new Map<string, Intl.DateTimeFormat>();

/** The zone's formatter; throws a `RangeError` for a zone `Intl` does not know. */
export function zoneFormatter(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      era: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** Wall ms for a date and a time of day; years 0 to 99 stay themselves (`Date.UTC` adds 1900). */
export function wallMs(year: number, month: number, day: number, timeOfDayMs = 0): number {
  return new Date(0).setUTCFullYear(year, month - 1, day) + timeOfDayMs;
}

/** The zone's offset from UTC at `instantMs`, in ms: its wall time there minus the instant. */
export function offsetAt(timeZone: string, instantMs: number): number {
  // Intl shows whole seconds, and offsets are whole seconds: compare at the second.
  const second = Math.floor(instantMs / 1000) * 1000;
  let year = 0;
  let month = 1;
  let day = 1;
  let time = 0;
  let beforeChrist = false;
  for (const part of zoneFormatter(timeZone).formatToParts(second)) {
    const n = Number(part.value);
    switch (part.type) {
      case 'era':
        beforeChrist = part.value === 'BC';
        break;
      case 'year':
        year = n;
        break;
      case 'month':
        month = n;
        break;
      case 'day':
        day = n;
        break;
      case 'hour':
        time += n * 3_600_000;
        break;
      case 'minute':
        time += n * 60_000;
        break;
      case 'second':
        time += n * 1000;
        break;
    }
  }
  // Year 1 BC is year 0, 2 BC is -1: the proleptic calendar `Date` uses.
  return wallMs(beforeChrist ? 1 - year : year, month, day, time) - second;
}

/** The wall time in `timeZone` at `instantMs`, as wall ms. */
export function wallAt(timeZone: string, instantMs: number): number {
  return instantMs + offsetAt(timeZone, instantMs);
}

/**
 * The instant a wall time names in `timeZone`, as `Temporal`'s disambiguation `'compatible'`
 * picks it: of two (the hour a fall back repeats) the earlier; of none (the hour a spring forward
 * skips) the instant the same wall time names with the offset before the gap, which the zone shows
 * as the wall time plus the gap (02:30 in a gap from 02:00 to 03:00 → 03:30).
 *
 * The offsets a day either side are those a wall time can have (zones move by hours at most,
 * and not twice in two days): each gives a candidate, the answer where the zone shows it as the
 * wall time.
 */
export function instantAt(timeZone: string, wall: number): number {
  const before = offsetAt(timeZone, wall - DAY_MS);
  const after = offsetAt(timeZone, wall + DAY_MS);
  const early = wall - before;
  if (before === after) return early;
  const late = wall - after;
  const earlyShown = offsetAt(timeZone, early) === before;
  const lateShown = offsetAt(timeZone, late) === after;
  if (earlyShown && lateShown) return Math.min(early, late);
  if (earlyShown) return early;
  if (lateShown) return late;
  return early;
}

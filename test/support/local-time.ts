/**
 * Local time in a zone for the calendar specs, read straight from `Intl` so that they check
 * lib/policy/time-zone.ts against something it does not share.
 */

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;

export interface LocalTime {
  /** The local fields as the UTC instant that has them: `Date` UTC getters read them. */
  readonly wall: number;
  /** 0 for Monday to 6 for Sunday. */
  readonly weekday: number;
  /** `'2026-03-29T03:30:00.000'`. */
  readonly iso: string;
}

const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];
const formatters = new Map<string, Intl.DateTimeFormat>();

export function localTime(zone: string, ms: number): LocalTime {
  let formatter = formatters.get(zone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-GB', {
      timeZone: zone,
      hourCycle: 'h23',
      weekday: 'short',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      fractionalSecondDigits: 3,
    });
    formatters.set(zone, formatter);
  }
  const parts: Record<string, string> = {};
  for (const { type, value } of formatter.formatToParts(ms)) parts[type] = value;
  const { year, month, day, hour, minute, second, fractionalSecond } = parts;
  const iso = `${year}-${month}-${day}T${hour}:${minute}:${second}.${fractionalSecond}`;
  return { wall: Date.parse(`${iso}Z`), weekday: WEEKDAYS.indexOf(parts.weekday), iso };
}

/** The zone's offset at `ms`: its wall time minus the instant. */
export function offset(zone: string, ms: number): number {
  return localTime(zone, ms).wall - ms;
}

/** The instant of a local ISO time written without an offset, when it exists once in the zone. */
export function instantOf(zone: string, iso: string): number {
  const wall = Date.parse(`${iso}Z`);
  const found: number[] = [];
  // Every offset in use is a whole quarter hour within ±14 h.
  for (let minutes = -14 * 60; minutes <= 14 * 60; minutes += 15) {
    const ms = wall - minutes * 60_000;
    if (localTime(zone, ms).wall === wall) found.push(ms);
  }
  if (found.length !== 1) throw new Error(`${iso} is in ${zone} at ${found.length} instants`);
  return found[0];
}

/** The checks every validated input shares: errors that name the field and the place, durations and counts. */

/** Thrown when a policy or module option is invalid; the message names the field and the place. */
export class RateLimitConfigError extends Error {
  override readonly name = 'RateLimitConfigError';
}

// Ten years keeps `now + period` in microseconds well inside 2^53, where Lua doubles stay exact.
export const MAX_PERIOD_MS = 10 * 365 * 24 * 3600 * 1000;
// Large enough for any real quota, small enough that counts times windows stay exact doubles.
export const MAX_THRESHOLD = 1_000_000_000;
/** What a count must be, in every message about one (threshold, burst, cost, an override's). */
export const COUNT_RANGE = `an integer from 1 to ${MAX_THRESHOLD}`;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/;
export const NAME = /^[A-Za-z0-9_.\-*]{1,64}$/;

/** Parses a duration into whole milliseconds, or throws naming `field` and `where`. */
export function parseDuration(value: unknown, field: string, where: string): number {
  let ms: number;
  if (typeof value === 'number') {
    ms = value * 1000;
  } else if (typeof value === 'string') {
    const match = DURATION.exec(value.trim());
    if (!match) {
      const expected = "a number of seconds or a string like '500ms', '30s', '5m', '1h', '1d'";
      throw configError(where, field, value, expected);
    }
    ms = Number(match[1]) * UNIT_MS[match[2]];
  } else {
    throw configError(where, field, value, 'a number of seconds or a duration string');
  }
  // Floating-point seconds such as 0.1 * 1000 land a hair off an integer; accept those.
  const rounded = Math.round(ms);
  if (!Number.isFinite(ms) || Math.abs(ms - rounded) > 1e-6) {
    throw configError(where, field, value, 'a whole number of milliseconds');
  }
  if (rounded < 1) throw configError(where, field, value, 'at least 1ms');
  if (rounded > MAX_PERIOD_MS) throw configError(where, field, value, 'at most 10 years');
  return rounded;
}

/** Checks a count (threshold, burst, cost): an integer from 1 to {@link MAX_THRESHOLD}. */
export function checkCount(value: unknown, field: string, where: string): number {
  if (
    typeof value !== 'number' ||
    !Number.isSafeInteger(value) ||
    value < 1 ||
    value > MAX_THRESHOLD
  ) {
    throw configError(where, field, value, COUNT_RANGE);
  }
  return value;
}

export function checkName(value: unknown, where: string): string {
  if (typeof value !== 'string' || !NAME.test(value)) {
    throw configError(where, 'name', value, '1 to 64 letters, digits or _ . - *');
  }
  return value;
}

/** `30000` → `'30s'`, `500` → `'500ms'`, `90000` → `'90s'`: the largest unit that divides evenly. */
export function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    if (ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  }
  return `${ms}ms`;
}

/** The error for `field` at `where`: what it must be, and what it was. */
export function configError(where: string, field: string, value: unknown, expected: string) {
  return new RateLimitConfigError(`${where}: ${field} must be ${expected}, got ${describe(value)}`);
}

export function valueOr<T>(value: T | undefined, fallback: T): T {
  return value === undefined ? fallback : value;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'number') return String(value);
  try {
    return String(JSON.stringify(value) ?? value);
  } catch {
    return String(value);
  }
}

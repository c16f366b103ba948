/**
 * A time span: a number of seconds, or a string such as `'500ms'`, `'30s'`, `'5m'`, `'1h'`, `'1d'`.
 */
export type Duration = number | string;

/** What `@RateLimit()` and `RateLimitService.consume()` accept. */
export interface RateLimitPolicy {
  /** Length of the sliding window. A number means seconds. Default 60. */
  period?: Duration;
  /** Requests allowed per window. A positive integer. Default 3. */
  threshold?: number;
  /** Name shown in the `RateLimit` and `RateLimit-Policy` headers. Default `"<threshold>-per-<period>"`. */
  name?: string;
}

/** A validated policy in the units the stores use. Frozen; built once per handler. */
export interface ResolvedPolicy {
  readonly name: string;
  readonly algorithm: 'sliding-window';
  readonly periodMs: number;
  readonly periodUs: number;
  readonly threshold: number;
}

/** Thrown when a policy or module option is invalid; the message names the field and the place. */
export class RateLimitConfigError extends Error {
  override readonly name = 'RateLimitConfigError';
}

/** The seed annotation's defaults: `@RateLimit(period = 60, threshold = 3)`. */
export const DEFAULT_PERIOD_SECONDS = 60;
export const DEFAULT_THRESHOLD = 3;

// Ten years keeps `now + period` in microseconds well inside 2^53, where Lua doubles stay exact.
const MAX_PERIOD_MS = 10 * 365 * 24 * 3600 * 1000;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/;
const NAME = /^[A-Za-z0-9_.\-*]+$/;

/** Parses a duration into whole milliseconds, or throws naming `field` and `where`. */
export function parseDuration(value: unknown, field: string, where: string): number {
  let ms: number;
  if (typeof value === 'number') {
    ms = value * 1000;
  } else if (typeof value === 'string') {
    const match = DURATION.exec(value.trim());
    if (!match) {
      throw configError(
        where,
        field,
        value,
        "a number of seconds or a string like '500ms', '30s', '5m', '1h', '1d'",
      );
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

/**
 * Validates a policy and converts it to store units.
 * @param where names the place for error messages, e.g. `@RateLimit on ItemsController.list`.
 */
export function resolvePolicy(policy: RateLimitPolicy | undefined, where: string): ResolvedPolicy {
  if (
    policy !== undefined &&
    (policy === null || typeof policy !== 'object' || Array.isArray(policy))
  ) {
    throw configError(where, 'policy', policy, 'an object like { period: 30, threshold: 2 }');
  }
  // Only a missing field takes the default; an explicit null is a mistake worth reporting.
  const periodMs = parseDuration(valueOr(policy?.period, DEFAULT_PERIOD_SECONDS), 'period', where);
  const threshold = valueOr(policy?.threshold, DEFAULT_THRESHOLD);
  if (typeof threshold !== 'number' || !Number.isSafeInteger(threshold) || threshold < 1) {
    throw configError(where, 'threshold', threshold, 'a positive integer');
  }
  const name = valueOr(policy?.name, `${threshold}-per-${formatDuration(periodMs)}`);
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw configError(where, 'name', name, 'letters, digits and _ . - * only');
  }
  return Object.freeze({
    name,
    algorithm: 'sliding-window',
    periodMs,
    periodUs: periodMs * 1000,
    threshold,
  });
}

/** `30000` → `'30s'`, `500` → `'500ms'`, `90000` → `'90s'`: the largest unit that divides evenly. */
export function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    if (ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  }
  return `${ms}ms`;
}

export function configError(where: string, field: string, value: unknown, expected: string) {
  return new RateLimitConfigError(`${where}: ${field} must be ${expected}, got ${describe(value)}`);
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return 'a function';
  try {
    return String(JSON.stringify(value) ?? value);
  } catch {
    return String(value);
  }
}

function valueOr<T>(value: T | undefined, fallback: T): T {
  return value === undefined ? fallback : value;
}

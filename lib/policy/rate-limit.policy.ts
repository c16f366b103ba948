import { type Algorithm, ALGORITHM_CODES } from '../algorithms/algorithm.js';

/**
 * A time span: a number of seconds, or a string such as `'500ms'`, `'30s'`, `'5m'`, `'1h'`, `'1d'`.
 */
export type Duration = number | string;

/**
 * What a function of the context returns for a value: the value, or nothing (`undefined`) for the
 * value's default, at once or as a promise.
 */
export type DynamicResult<T> = T | undefined | Promise<T | undefined>;

/**
 * A value given directly, or computed per request from the context (e.g. per customer plan). A
 * function that returns `undefined` gets the default, as if the field were not set.
 */
export type Dynamic<T, C> = T | ((context: C) => DynamicResult<T>);

/**
 * One limit: what `@RateLimit()` and `RateLimitService.consume()` accept.
 * `C` is what dynamic values receive: the `ExecutionContext` on routes.
 */
export interface RateLimitPolicy<C = never> {
  /** Length of the window (or the refill period). A number means seconds. Default 60. */
  period?: Dynamic<Duration, C>;
  /** Requests allowed per period. A positive integer. Default 3. */
  threshold?: Dynamic<number, C>;
  /** How requests are counted. Default `'sliding-window'`. */
  algorithm?: Algorithm;
  /**
   * Token bucket: the bucket's capacity. Leaky bucket (GCRA): how many requests may arrive at
   * once. Default `threshold`. Only these two algorithms take it.
   */
  burst?: number;
  /** How many requests one call counts as. A positive integer. Default 1. */
  cost?: Dynamic<number, C>;
  /**
   * Name in the `RateLimit` headers. Default `"<threshold>-per-<period>"`, e.g. `"5-per-1s"`;
   * `"<threshold>-at-once"` for a concurrency limit.
   */
  name?: string;
  /**
   * Once this policy rejects a request, lock the caller out of it for this long, from that
   * moment, on every instance. Requests meanwhile are rejected with `Retry-After` set to the time
   * left and change nothing; the caller's count starts afresh when the lock-out ends. Without it,
   * a rejection locks nothing out. A number means seconds.
   *
   * @example
   * ```ts
   * @RateLimit({ period: '15m', threshold: 5, blockDuration: '1h' })
   * ```
   */
  blockDuration?: Duration;
}

/** A validated policy in the units the stores use. Frozen. */
export interface ResolvedPolicy {
  readonly name: string;
  readonly algorithm: Algorithm;
  /** Short algorithm id used in keys and script arguments. */
  readonly code: string;
  readonly periodMs: number;
  readonly periodUs: number;
  readonly threshold: number;
  /** Capacity for the bucket algorithms; equal to `threshold` for the others. */
  readonly burst: number;
  /** Tells the policies of one route apart in keys: `<code>:<name>`. */
  readonly id: string;
  /** The lock-out after a rejection, in microseconds; 0 for none. */
  readonly blockUs: number;
}

/** Thrown when a policy or module option is invalid; the message names the field and the place. */
export class RateLimitConfigError extends Error {
  override readonly name = 'RateLimitConfigError';
}

/** The seed annotation's defaults: `@RateLimit(period = 60, threshold = 3)`. */
export const DEFAULT_PERIOD_SECONDS = 60;
export const DEFAULT_THRESHOLD = 3;
/** Policies one decision may combine; each adds a key and five script arguments. */
export const MAX_POLICIES = 8;

// Ten years keeps `now + period` in microseconds well inside 2^53, where Lua doubles stay exact.
const MAX_PERIOD_MS = 10 * 365 * 24 * 3600 * 1000;
// Large enough for any real quota, small enough that counts times windows stay exact doubles.
const MAX_THRESHOLD = 1_000_000_000;
const MAX_BUCKET_US = 1e15;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/;
const NAME = /^[A-Za-z0-9_.\-*]{1,64}$/;
const BUCKETS: readonly Algorithm[] = ['token-bucket', 'leaky-bucket'];

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

/** Checks a count (threshold, burst, cost): a positive integer within bounds. */
export function checkCount(value: unknown, field: string, where: string): number {
  if (
    typeof value !== 'number' ||
    !Number.isSafeInteger(value) ||
    value < 1 ||
    value > MAX_THRESHOLD
  ) {
    throw configError(where, field, value, 'a positive integer');
  }
  return value;
}

/**
 * Validates a policy whose values are all known and converts it to store units.
 * @param where names the place for error messages, e.g. `@RateLimit on ItemsController.list`.
 */
export function resolvePolicy(
  policy: RateLimitPolicy<unknown> | undefined,
  where: string,
): ResolvedPolicy {
  checkShape(policy, where);
  // Only a missing field takes the default; an explicit null is a mistake worth reporting.
  const periodMs = parseDuration(valueOr(policy?.period, DEFAULT_PERIOD_SECONDS), 'period', where);
  const threshold = checkCount(valueOr(policy?.threshold, DEFAULT_THRESHOLD), 'threshold', where);
  const algorithm = checkAlgorithm(policy?.algorithm, where);
  const burst = resolveBurst(policy?.burst, algorithm, threshold, where);
  // A concurrency limit's period is how long a lease lives, not a window it counts over.
  const defaultName =
    algorithm === 'concurrency'
      ? `${threshold}-at-once`
      : `${threshold}-per-${formatDuration(periodMs)}`;
  const name = checkName(valueOr(policy?.name, defaultName), where);
  const code = ALGORITHM_CODES[algorithm];
  const periodUs = periodMs * 1000;
  // Bucket capacities are held in microseconds of draining; keep them exact doubles.
  if (burst * Math.ceil(periodUs / threshold) > MAX_BUCKET_US) {
    throw configError(
      where,
      'burst',
      burst,
      'small enough that burst x period / threshold is under 30 years',
    );
  }
  const id = `${code}:${name}`;
  const blockUs = resolveBlock(policy?.blockDuration, where);
  return Object.freeze({
    name,
    algorithm,
    code,
    periodMs,
    periodUs,
    threshold,
    burst,
    id,
    blockUs,
  });
}

/** Checks what can be checked before the dynamic values are known. */
export function checkShape(
  policy: unknown,
  where: string,
): asserts policy is RateLimitPolicy<unknown> | undefined {
  if (
    policy !== undefined &&
    (policy === null || typeof policy !== 'object' || Array.isArray(policy))
  ) {
    throw configError(where, 'policy', policy, 'an object like { period: 30, threshold: 2 }');
  }
}

export function checkAlgorithm(value: unknown, where: string): Algorithm {
  const algorithm = valueOr(value, 'sliding-window');
  if (typeof algorithm !== 'string' || !(algorithm in ALGORITHM_CODES)) {
    throw configError(
      where,
      'algorithm',
      algorithm,
      `one of ${Object.keys(ALGORITHM_CODES).join(', ')}`,
    );
  }
  return algorithm as Algorithm;
}

/** A lock-out duration in microseconds, 0 when absent. */
export function resolveBlock(value: unknown, where: string): number {
  return value === undefined ? 0 : parseDuration(value, 'blockDuration', where) * 1000;
}

function resolveBurst(
  value: unknown,
  algorithm: Algorithm,
  threshold: number,
  where: string,
): number {
  if (value === undefined) return threshold;
  if (!BUCKETS.includes(algorithm)) {
    throw configError(
      where,
      'burst',
      value,
      `omitted for ${algorithm} (only ${BUCKETS.join(' and ')} take it)`,
    );
  }
  return checkCount(value, 'burst', where);
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

import { type Algorithm } from '../algorithms/algorithm.js';
import { algorithmOf, defaultAlgorithm, isAlgorithm, REGISTRY } from '../algorithms/registry.js';
import { CALENDAR_PERIOD_MS, type CalendarUnit, type CalendarWindow } from './calendar-window.js';
import { resolveCalendar } from './calendar-policy.js';
import { type FieldList } from './known-fields.js';
import {
  checkCount,
  checkName,
  configError,
  formatDuration,
  parseDuration,
  valueOr,
} from './validation.js';

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
  /**
   * Length of the window (or the refill period). A number means seconds. Default 60. Left out
   * for a quota by the calendar (`calendar`).
   */
  period?: Dynamic<Duration, C>;
  /** Requests allowed per period. An integer from 1 to 10^9. Default 3. */
  threshold?: Dynamic<number, C>;
  /**
   * How requests are counted. Default `'sliding-window'`; with `calendar`, `'fixed-window'`.
   */
  algorithm?: Algorithm;
  /**
   * Token bucket: the bucket's capacity. Leaky bucket (GCRA): how many requests may arrive at
   * once. Default `threshold`. Only these two algorithms take it.
   */
  burst?: number;
  /** How many requests one call counts as. An integer from 1 to 10^9. Default 1. */
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
  /**
   * What answers this policy while the store fails, instead of the module's `onStoreError`:
   * `'memory'` (this instance's memory store), `'allow'` or `'deny'` (503). On a request with
   * several policies, the strictest answer wins: any `'deny'` denies, then `'memory'`.
   *
   * @example
   * ```ts
   * // a paid partner's API: never let calls through unmetered
   * @RateLimit({ period: '1s', threshold: 10, onStoreError: 'deny' })
   * ```
   */
  onStoreError?: StoreErrorPolicy;
  /**
   * Count in windows that follow the calendar, in place of `period`: a day, a week (from
   * Monday) or a month, in `timeZone`, from midnight or from the `anchor`. A window lasts as long
   * as the calendar says (a day of 23 or 25 hours across a daylight-saving change, a month of
   * 28 to 31 days); `Retry-After` and the reset point to the real end. Counted by `fixed-window`
   * when the policy names no algorithm; `sliding-window-counter` follows the calendar too, and
   * any other algorithm named beside it is an error.
   *
   * @example
   * ```ts
   * // 10,000 tokens per user per day, reset at midnight in New York
   * @RateLimit({ calendar: 'day', timeZone: 'America/New_York', threshold: 10_000 })
   * ```
   */
  calendar?: CalendarUnit;
  /** The IANA time zone of a `calendar` window, e.g. `'Europe/Berlin'`. Default `'UTC'`. */
  timeZone?: string;
  /**
   * Where a `calendar` window starts: its local time of day, and for weeks its weekday, for
   * months its day of the month (the 29th to 31st fall on a shorter month's last day). A `Date`,
   * an ISO 8601 string or ms since the epoch; on routes also a function of the context, e.g. a
   * customer's billing date. Default: midnight, Monday, the 1st.
   *
   * @example
   * ```ts
   * // a monthly quota that renews on each customer's billing day
   * @RateLimit({ algorithm: 'fixed-window', calendar: 'month', threshold: 1_000_000,
   *   anchor: (ctx) => ctx.switchToHttp().getRequest().user.billingStartedAt })
   * ```
   */
  anchor?: Dynamic<Date | string | number, C>;
}

/**
 * Every field of {@link RateLimitPolicy}; any other is rejected as a typo. A field added to the
 * interface must be added here too, or this does not compile.
 */
export const POLICY_FIELDS = {
  period: true,
  threshold: true,
  algorithm: true,
  burst: true,
  cost: true,
  name: true,
  blockDuration: true,
  onStoreError: true,
  calendar: true,
  timeZone: true,
  anchor: true,
} as const satisfies FieldList<RateLimitPolicy>;

/** What answers while the store fails: the memory store, or allow all, or deny all (503). */
export type StoreErrorPolicy = 'memory' | 'allow' | 'deny';
export const STORE_ERROR_POLICIES: readonly StoreErrorPolicy[] = ['memory', 'allow', 'deny'];

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
  /** This policy's own answer while the store fails; undefined for the module's. */
  readonly onStoreError: StoreErrorPolicy | undefined;
  /**
   * Set for a quota by the calendar (`calendar`): its windows, in place of windows of `periodUs`
   * aligned to the epoch; `periodUs` is then the unit's longest length (a day across a clock
   * change, a month of 31 days), for what needs one bound.
   */
  readonly calendar?: CalendarWindow;
}

/** The seed annotation's defaults: `@RateLimit(period = 60, threshold = 3)`. */
export const DEFAULT_PERIOD_SECONDS = 60;
export const DEFAULT_THRESHOLD = 3;
/** Policies one decision may combine; each adds a key and five script arguments. */
export const MAX_POLICIES = 8;

/** Most a bucket may hold, in µs of draining: burst x period / threshold stays an exact double. */
export const MAX_BUCKET_US = 1e15;

/**
 * Validates a policy whose values are all known and converts it to store units.
 * @param where names the place for error messages, e.g. `@RateLimit on ItemsController.list`.
 */
export function resolvePolicy(
  policy: RateLimitPolicy<unknown> | undefined,
  where: string,
): ResolvedPolicy {
  checkShape(policy, where);
  const algorithm = checkAlgorithm(policy, where);
  const calendar = resolveCalendar(policy, algorithm, where);
  // Only a missing field takes the default; an explicit null is a mistake worth reporting.
  const periodMs =
    calendar === undefined
      ? parseDuration(valueOr(policy?.period, DEFAULT_PERIOD_SECONDS), 'period', where)
      : CALENDAR_PERIOD_MS[calendar.unit];
  const threshold = checkCount(valueOr(policy?.threshold, DEFAULT_THRESHOLD), 'threshold', where);
  const { code, holdsLeases } = algorithmOf(algorithm);
  const burst = resolveBurst(policy?.burst, algorithm, threshold, where);
  // A concurrency limit's period is how long a lease lives, not a window it counts over.
  const defaultName = holdsLeases
    ? `${threshold}-at-once`
    : `${threshold}-per-${calendar?.unit ?? formatDuration(periodMs)}`;
  const name = checkName(valueOr(policy?.name, defaultName), where);
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
  const onStoreError = checkStoreErrorPolicy(policy?.onStoreError, where);
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
    onStoreError,
    ...(calendar === undefined ? {} : { calendar }),
  });
}

/** A policy's own `onStoreError`: one of the three answers, or undefined for the module's. */
export function checkStoreErrorPolicy(value: unknown, where: string): StoreErrorPolicy | undefined {
  if (value === undefined) return undefined;
  if (!STORE_ERROR_POLICIES.includes(value as StoreErrorPolicy)) {
    throw configError(where, 'onStoreError', value, "'memory', 'allow' or 'deny'");
  }
  return value as StoreErrorPolicy;
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

/**
 * The algorithm a policy counts with: the one it names, checked, else the default for it (a fixed
 * window for a quota by the calendar, the sliding log otherwise). Decided here alone: keys,
 * headers, the block cache, telemetry and overrides all read the algorithm this returns.
 */
export function checkAlgorithm(
  policy: Pick<RateLimitPolicy<unknown>, 'algorithm' | 'calendar'> | undefined,
  where: string,
): Algorithm {
  const algorithm = valueOr(policy?.algorithm, defaultAlgorithm(policy?.calendar !== undefined));
  if (!isAlgorithm(algorithm)) {
    throw configError(where, 'algorithm', algorithm, `one of ${namesOf(REGISTRY).join(', ')}`);
  }
  return algorithm;
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
  if (!algorithmOf(algorithm).takesBurst) {
    const takers = namesOf(REGISTRY.filter((e) => e.takesBurst));
    throw configError(
      where,
      'burst',
      value,
      `omitted for ${algorithm} (only ${takers.join(' and ')} take it)`,
    );
  }
  return checkCount(value, 'burst', where);
}

function namesOf(entries: readonly { readonly name: Algorithm }[]): string[] {
  return entries.map((e) => e.name);
}

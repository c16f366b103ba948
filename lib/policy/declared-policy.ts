import { type Algorithm } from '../algorithms/algorithm.js';
import { type CalendarUnit } from './calendar-window.js';
import { type FieldList } from './known-fields.js';

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

import { algorithmOf, REGISTRY } from '../algorithms/registry.js';
import { type Duration, MAX_BUCKET_US, type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import { configError, parseDuration } from '../policy/validation.js';
import { checkFields, type FieldList, knownFields } from '../policy/known-fields.js';
import { checkOverrideCount, checkOverrideTracker } from './override-bounds.js';
import { type LimitOverride, type OverrideWrite } from './override-source.js';

/** The limit `RateLimitService.override` puts in place of a policy's own. */
export interface OverrideLimit {
  /** Requests allowed per period (concurrent calls for `'concurrency'`). An integer from 1 to 10^9. */
  threshold: number;
  /** In place of the policy's period; omitted: the policy's own. A number means seconds. */
  period?: Duration;
  /** In place of a bucket policy's burst (`token-bucket`, `leaky-bucket` only). */
  burst?: number;
}

/** Whom and for how long `RateLimitService.override` applies. */
export interface OverrideOptions {
  /**
   * One tracker's quota only, as the module's `getTracker` (or the default tracker,
   * `user:<id>` / `ip:<address>`), the policy's own `tracker`, or the `key` given to
   * `RateLimitService` returns it. Omitted: every tracker, except those with an override of
   * their own.
   */
  tracker?: string;
  /** Ends the override by itself after this long. Omitted: in force until cleared. */
  ttl?: Duration;
}

const TAKERS = REGISTRY.filter((e) => e.takesBurst).map((e) => e.name);
const LIMIT_FIELDS = knownFields(
  { threshold: true, period: true, burst: true } as const satisfies FieldList<OverrideLimit>,
  {
    // Here more likely how long the override lasts than @nestjs/throttler's name for the period.
    ttl: 'ttl, how long the override lasts, goes in the options: override(policy, { threshold }, { ttl }); the window is period',
  },
);
const OPTION_FIELDS = knownFields({
  tracker: true,
  ttl: true,
} as const satisfies FieldList<OverrideOptions>);

/** Checks what `override` was given, each field on its own, into what a source stores. */
export function checkOverride(
  policy: string,
  limit: OverrideLimit,
  options: OverrideOptions | undefined,
  where: string,
): OverrideWrite {
  if (limit === null || typeof limit !== 'object') {
    throw configError(where, 'limit', limit, 'an object like { threshold: 100 }');
  }
  checkFields(limit, LIMIT_FIELDS, where);
  if (options !== undefined) {
    if (options === null || typeof options !== 'object') {
      throw configError(where, 'options', options, "an object like { ttl: '1h' }");
    }
    checkFields(options, OPTION_FIELDS, where);
  }
  const threshold = checkOverrideCount(limit.threshold, 'threshold', where);
  const periodMs =
    limit.period === undefined ? undefined : parseDuration(limit.period, 'period', where);
  const burst =
    limit.burst === undefined ? undefined : checkOverrideCount(limit.burst, 'burst', where);
  const tracker = checkOverrideTracker(options?.tracker, where);
  const ttlMs = options?.ttl === undefined ? undefined : parseDuration(options.ttl, 'ttl', where);
  const stored: LimitOverride = {
    threshold,
    ...(periodMs === undefined ? {} : { periodMs }),
    ...(burst === undefined ? {} : { burst }),
  };
  return {
    policy,
    limit: stored,
    ...(tracker === undefined ? {} : { tracker }),
    ...(ttlMs === undefined ? {} : { ttlMs }),
  };
}

/**
 * Checks an override against the policies of its name this instance knows, so that a mistake is
 * refused when it is made rather than ignored on every request: a `burst` for window policies
 * only, or a bucket whose capacity would not stay exact.
 */
export function checkAgainstPolicies(
  limit: LimitOverride,
  known: ReadonlyArray<{ readonly algorithm: ResolvedPolicy['algorithm']; fixed?: ResolvedPolicy }>,
  where: string,
): void {
  if (
    limit.burst !== undefined &&
    known.length > 0 &&
    known.every((p) => !algorithmOf(p.algorithm).takesBurst)
  ) {
    const algorithms = [...new Set(known.map((p) => p.algorithm))].join(', ');
    const expected = `omitted for ${algorithms} (only ${TAKERS.join(' and ')} take it)`;
    throw configError(where, 'burst', limit.burst, expected);
  }
  if (limit.periodMs !== undefined && known.some((p) => p.fixed?.calendar !== undefined)) {
    const expected = 'omitted for a policy with calendar, whose windows follow the calendar';
    throw configError(where, 'period', limit.periodMs / 1000, expected);
  }
  for (const { fixed } of known) {
    if (fixed !== undefined && overriddenPolicy(fixed, limit) === undefined) {
      const expected = 'small enough that burst x period / threshold is under 30 years';
      throw configError(where, 'burst', limit.burst ?? limit.threshold, expected);
    }
  }
}

/**
 * `base` with the override's values: the same name, algorithm and id, so that its keys, and the
 * usage they hold, stay. A bucket takes the override's burst, else its own when it set one apart
 * from its threshold, else the new threshold; the other algorithms' burst is their threshold.
 * Undefined when the result would break a bound `resolvePolicy` keeps.
 */
export function overriddenPolicy(
  base: ResolvedPolicy,
  limit: LimitOverride,
): ResolvedPolicy | undefined {
  const { threshold } = limit;
  // A calendar policy's windows come from the calendar: a period would change nothing there.
  const periodMs = (base.calendar === undefined ? limit.periodMs : undefined) ?? base.periodMs;
  const periodUs = periodMs * 1000;
  let burst = threshold;
  if (algorithmOf(base.algorithm).takesBurst) {
    burst = limit.burst ?? (base.burst === base.threshold ? threshold : base.burst);
    if (burst * Math.ceil(periodUs / threshold) > MAX_BUCKET_US) return undefined;
  }
  return Object.freeze({ ...base, threshold, periodMs, periodUs, burst });
}

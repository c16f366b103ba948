import { type Algorithm } from '../algorithms/algorithm.js';
import { algorithmOf, defaultAlgorithm, isAlgorithm, REGISTRY } from '../algorithms/registry.js';
import { CALENDAR_PERIOD_MS, type CalendarWindow } from './calendar-window.js';
import { resolveCalendar } from './calendar-policy.js';
import {
  type RateLimitPolicy,
  STORE_ERROR_POLICIES,
  type StoreErrorPolicy,
} from './declared-policy.js';
import {
  checkCount,
  checkName,
  configError,
  formatDuration,
  parseDuration,
  valueOr,
} from './validation.js';

// The policy as declared is in declared-policy.ts, which the calendar's checks read without
// importing this file; every other file finds it here, beside the resolved form.
export {
  type Duration,
  type Dynamic,
  type DynamicResult,
  POLICY_FIELDS,
  type RateLimitPolicy,
  STORE_ERROR_POLICIES,
  type StoreErrorPolicy,
} from './declared-policy.js';

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

import {
  configError,
  COUNT_RANGE,
  MAX_PERIOD_MS,
  MAX_THRESHOLD,
  NAME,
  RateLimitConfigError,
} from '../policy/validation.js';
import {
  type OverrideEntry,
  type OverrideListing,
  type SkippedOverride,
} from './override-source.js';

/**
 * The longest tracker an override takes. A request's tracker may be any length (its key digests
 * it), but an override's is a value someone typed, stored and read by every instance on every
 * re-read: a megabyte there is a mistake, not a customer.
 */
export const MAX_OVERRIDE_TRACKER_LENGTH = 1024;

/**
 * How many overrides may be in force at once, per key prefix: the hash every instance reads on
 * every re-read stays small (about 11 MB at worst, with every tracker 1,024 characters long), and
 * a script that sets one per request in a loop is stopped with an error rather than filling Redis.
 */
export const MAX_OVERRIDES = 10_000;

/**
 * Checks a tracker given to `override` or `clearOverride`. A string too long is described by its
 * length alone: the error must not carry the megabyte it refuses.
 */
export function checkOverrideTracker(value: unknown, where: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') {
    throw configError(where, 'tracker', value, 'a non-empty string');
  }
  if (value.length > MAX_OVERRIDE_TRACKER_LENGTH) {
    throw new RateLimitConfigError(
      `${where}: tracker must be at most ${MAX_OVERRIDE_TRACKER_LENGTH} characters, got ${value.length}`,
    );
  }
  return value;
}

/** Checks a policy name as every policy's own is checked: 1 to 64 of `A-Z a-z 0-9 _ . - *`. */
export function checkOverridePolicyName(value: unknown, where: string): string {
  if (typeof value === 'string' && NAME.test(value)) return value;
  const expected = 'a policy name: 1 to 64 letters, digits or _ . - *';
  if (typeof value === 'string' && value.length > 64) {
    throw new RateLimitConfigError(
      `${where}: policyName must be ${expected}, got ${value.length} characters`,
    );
  }
  throw configError(where, 'policyName', value, expected);
}

/** Checks a threshold or burst: an integer from 1 to 10^9, as a policy's own. */
export function checkOverrideCount(value: unknown, field: string, where: string): number {
  if (typeof value === 'number' && isCount(value)) return value;
  throw configError(where, field, value, COUNT_RANGE);
}

/** The error for one override more than {@link MAX_OVERRIDES}. */
export function tooManyOverrides(where: string): RateLimitConfigError {
  return new RateLimitConfigError(
    `${where}: at most ${MAX_OVERRIDES} overrides may be in force, and ${MAX_OVERRIDES} are: ` +
      'clear some (or replace one: the same policy and tracker) first',
  );
}

/**
 * Why an override read back from the store is not one `override` could have stored (someone wrote
 * the hash by hand, or another version did); undefined when it is.
 */
export function storedEntryFault(entry: OverrideEntry): string | undefined {
  const { policy, tracker, limit } = entry;
  if (!NAME.test(policy)) return 'its policy is not a policy name';
  if (tracker !== undefined && (tracker === '' || tracker.length > MAX_OVERRIDE_TRACKER_LENGTH)) {
    return `its tracker is not 1 to ${MAX_OVERRIDE_TRACKER_LENGTH} characters`;
  }
  if (!isCount(limit.threshold)) return `its threshold is not ${COUNT_RANGE}`;
  if (limit.burst !== undefined && !isCount(limit.burst)) {
    return `its burst is not ${COUNT_RANGE}`;
  }
  const { periodMs } = limit;
  if (
    periodMs !== undefined &&
    !(Number.isSafeInteger(periodMs) && periodMs >= 1 && periodMs <= MAX_PERIOD_MS)
  ) {
    return 'its period is not a whole number of ms from 1 ms to 10 years';
  }
  return undefined;
}

/**
 * The entries of `listing` that are overrides `override` could have stored, at most
 * {@link MAX_OVERRIDES} of them; the others skipped, each with why.
 */
export function usableEntries(listing: OverrideListing): {
  entries: OverrideEntry[];
  skipped: SkippedOverride[];
} {
  const entries: OverrideEntry[] = [];
  const skipped = listing.skipped.slice();
  for (const entry of listing.entries) {
    const fault = storedEntryFault(entry);
    if (fault !== undefined) {
      skipped.push({ id: entryLabel(entry), reason: fault });
    } else if (entries.length >= MAX_OVERRIDES) {
      skipped.push({ id: entryLabel(entry), reason: `past the ${MAX_OVERRIDES} overrides taken` });
    } else {
      entries.push(entry);
    }
  }
  return { entries, skipped };
}

/** How an entry is named in a warning: its policy and tracker, cut short. */
export function entryLabel(entry: Pick<OverrideEntry, 'policy' | 'tracker'>): string {
  return shortened(
    JSON.stringify(entry.tracker === undefined ? [entry.policy] : [entry.policy, entry.tracker]),
  );
}

/** `text`, cut to 80 characters: a warning names an entry, it does not reprint it. */
export function shortened(text: string): string {
  return text.length <= 80 ? text : `${text.slice(0, 77)}…`;
}

function isCount(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 1 && value <= MAX_THRESHOLD;
}

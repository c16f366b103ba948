import {
  checkOverridePolicyName,
  checkOverrideTracker,
  tooManyOverrides,
  usableEntries,
} from './override-bounds.js';
import {
  checkAgainstPolicies,
  checkOverride,
  type OverrideLimit,
  type OverrideOptions,
} from './overridden-policy.js';
import { type OverrideRegistry } from './override-registry.js';

/** An override in force, as `RateLimitService.overrides()` lists it. */
export interface OverrideInForce {
  /** The name of the policies it applies to. */
  readonly policy: string;
  /** The one tracker it applies to; undefined for every tracker. */
  readonly tracker?: string;
  readonly threshold: number;
  /** The period in its place, in ms; undefined: each policy keeps its own. */
  readonly periodMs?: number;
  /** The burst in its place; undefined: each bucket policy's own (see `override`). */
  readonly burst?: number;
  /** Time left, in ms, when listed; undefined: in force until cleared. */
  readonly expiresInMs?: number;
  /** When it ends, by this process's clock; undefined: in force until cleared. */
  readonly expiresAt?: Date;
}

const WHERE = 'RateLimitService.override';

/**
 * Checks and stores an override, then reads the source again, so that it is in force on this
 * instance when this resolves (on the others once they hear of it). Everything is checked before
 * anything is written; a new override past `MAX_OVERRIDES` is refused by the source itself.
 */
export async function setOverride(
  registry: OverrideRegistry,
  policyName: string,
  limit: OverrideLimit,
  options: OverrideOptions | undefined,
): Promise<void> {
  const known = registry.known.get(checkOverridePolicyName(policyName, WHERE));
  if (known === undefined) throw registry.known.unknown(policyName, WHERE);
  const write = checkOverride(policyName, limit, options, WHERE);
  checkAgainstPolicies(write.limit, known, WHERE);
  if (!(await registry.source.set(write))) throw tooManyOverrides(WHERE);
  await registry.reload();
}

/** Removes an override, then reads the source again; resolves whether there was one. */
export async function clearOverride(
  registry: OverrideRegistry,
  policyName: string,
  options: Pick<OverrideOptions, 'tracker'> | undefined,
): Promise<boolean> {
  const where = 'RateLimitService.clearOverride';
  // Any policy name, known here or not: the override may have been set by an instance that knows
  // a policy this one does not.
  checkOverridePolicyName(policyName, where);
  const tracker = checkOverrideTracker(options?.tracker, where);
  const had = await registry.source.clear(policyName, tracker);
  await registry.reload();
  return had;
}

/** Every override in force, as the source lists them now: those the registry would apply. */
export async function listOverrides(registry: OverrideRegistry): Promise<OverrideInForce[]> {
  const now = Date.now();
  const { entries } = usableEntries(await registry.source.list());
  return entries.map(({ policy, tracker, limit, expiresInMs }) => ({
    policy,
    ...(tracker === undefined ? {} : { tracker }),
    threshold: limit.threshold,
    ...(limit.periodMs === undefined ? {} : { periodMs: limit.periodMs }),
    ...(limit.burst === undefined ? {} : { burst: limit.burst }),
    ...(expiresInMs === undefined ? {} : { expiresInMs, expiresAt: new Date(now + expiresInMs) }),
  }));
}

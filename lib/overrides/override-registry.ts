import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import { StoreNotConnectedError } from '../stores/redis/clients/script-client.js';
import { encodeKeyPart, policyTrackerPart } from '../keys/route-keys.js';
import { type KnownPolicies } from './known-policies.js';
import { overriddenPolicy } from './overridden-policy.js';
import { ListingChecks } from './listing-checks.js';
import {
  type LimitOverride,
  type OverrideEntry,
  type OverrideListing,
  type OverrideSource,
} from './override-source.js';

/** One override in force here, with the policies it has been applied to so far. */
interface Active {
  readonly entry: OverrideEntry;
  /** Per policy it replaced, the replacement: built once per change, not per request. */
  readonly built: WeakMap<ResolvedPolicy, ResolvedPolicy>;
}

/** The overrides of one policy name. */
interface Named {
  all: Active | undefined;
  /** Per tracker, by its key part: the module's and a policy's own tracker spell it apart. */
  byPart: Map<string, Active> | undefined;
}

/**
 * What the registry logs: a failing source, an override a policy cannot take, entries it skips,
 * and overrides that vanished from the store without a clear.
 */
export interface OverrideLogger {
  log(message: string): void;
  warn(message: string): void;
}

// Beyond setTimeout's range; an expiry that far off is checked again on the way.
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The overrides in force on this instance, indexed by policy name and tracker, as the source
 * last listed them: at start, whenever the source reports a change, on a fixed period besides
 * (a lost change notice costs one period at most), and when the earliest one ends. The decision
 * path reads `size` alone while there is none.
 */
export class OverrideRegistry {
  /** How many overrides are in force here; 0 on the common path, where nothing else is read. */
  size = 0;
  private byName = new Map<string, Named>();
  private refreshTimer: NodeJS.Timeout | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  private failing = false;
  private warned = false;
  private closed = false;
  private readonly warnedPolicies = new WeakSet<ResolvedPolicy>();
  private readonly checks: ListingChecks;
  /** Bumped on every listing installed: what was applied before may differ now. */
  private version = 0;
  /** Per policy list that lives on (a route's fixed policies, the service's), what it became. */
  private readonly applied = new WeakMap<
    readonly ResolvedPolicy[],
    { readonly version: number; readonly policies: readonly ResolvedPolicy[] }
  >();

  constructor(
    readonly source: OverrideSource,
    readonly known: KnownPolicies,
    private readonly refreshMs: number,
    private readonly logger: OverrideLogger,
  ) {
    this.checks = new ListingChecks(logger);
  }

  /**
   * Loads what is in force and keeps it current: one watch, one interval per process. Waits for
   * the first listing `withinMs` at most: a source that cannot answer yet is read again later.
   */
  async start(withinMs: number): Promise<void> {
    this.source.watch(() => void this.reload());
    this.refreshTimer = setInterval(() => void this.reload(), this.refreshMs);
    this.refreshTimer.unref();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, withinMs)));
    await Promise.race([this.reload(), late]);
    clearTimeout(timer);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.refreshTimer);
    clearTimeout(this.expiryTimer);
    await this.source.close();
  }

  /**
   * Reads the source again. Resolves once a listing started after this call is in place, so that
   * the caller of a change sees it applied here; calls meanwhile share that one listing.
   */
  reload(): Promise<void> {
    if (this.queued !== undefined) return this.queued;
    if (this.running === undefined) return this.run();
    this.queued = this.running.then(() => {
      this.queued = undefined;
      return this.run();
    });
    return this.queued;
  }

  /** Whether some of `policies` has an override for one tracker: their trackers are needed. */
  wantsTrackers(policies: readonly ResolvedPolicy[]): boolean {
    for (let i = 0; i < policies.length; i++) {
      if (this.byName.get(policies[i].name)?.byPart !== undefined) return true;
    }
    return false;
  }

  /**
   * `policies` with those that have an override replaced; the same array when none has one.
   * `parts` is each policy's tracker as a key part (one string for all), when
   * {@link wantsTrackers} said so: one tracker's override wins over the one for every tracker.
   * With `lasting` (the same list comes again on later calls) and no tracker involved, the
   * result is kept until the next change: frozen, so that what shows it can keep its rendering.
   */
  apply(
    policies: readonly ResolvedPolicy[],
    parts: readonly string[] | string | undefined,
    lasting: boolean,
  ): readonly ResolvedPolicy[] {
    if (!lasting || parts !== undefined) return this.replaced(policies, parts);
    const kept = this.applied.get(policies);
    if (kept !== undefined && kept.version === this.version) return kept.policies;
    const result = this.replaced(policies, undefined);
    if (result !== policies) Object.freeze(result);
    this.applied.set(policies, { version: this.version, policies: result });
    return result;
  }

  private replaced(
    policies: readonly ResolvedPolicy[],
    parts: readonly string[] | string | undefined,
  ): readonly ResolvedPolicy[] {
    let replaced: ResolvedPolicy[] | undefined;
    for (let i = 0; i < policies.length; i++) {
      const base = policies[i];
      const named = this.byName.get(base.name);
      if (named === undefined) continue;
      let active = named.all;
      if (named.byPart !== undefined && parts !== undefined) {
        active = named.byPart.get(typeof parts === 'string' ? parts : parts[i]) ?? active;
      }
      if (active === undefined) continue;
      const policy = this.built(active, base);
      if (policy === base) continue;
      replaced ??= policies.slice();
      replaced[i] = policy;
    }
    return replaced ?? policies;
  }

  private built(active: Active, base: ResolvedPolicy): ResolvedPolicy {
    let policy = active.built.get(base);
    if (policy === undefined) {
      policy = overriddenPolicy(base, active.entry.limit);
      if (policy === undefined) {
        policy = base;
        this.warnUnfit(active.entry, base);
      }
      active.built.set(base, policy);
    }
    return policy;
  }

  private warnUnfit(entry: OverrideEntry, base: ResolvedPolicy): void {
    if (this.warnedPolicies.has(base)) return;
    this.warnedPolicies.add(base);
    this.logger.warn(
      `The override of policy "${entry.policy}" does not fit its ${base.algorithm} policy ` +
        '(burst x period / threshold must stay under 30 years); that policy keeps its own limit',
    );
  }

  private run(): Promise<void> {
    const running = this.load().finally(() => {
      if (this.running === running) this.running = undefined;
    });
    this.running = running;
    return running;
  }

  private async load(): Promise<void> {
    let listing: OverrideListing;
    try {
      listing = await this.source.list();
    } catch (error) {
      // Redis down is said once already, by the store; only another failure is worth a warning.
      if (!this.failing && !(error instanceof StoreNotConnectedError)) {
        this.warned = true;
        const reason = error instanceof Error ? error.message : String(error);
        this.logger.warn(
          `Could not read the limit overrides (${reason}); those last read stay in force, and they are read again every ${this.refreshMs} ms`,
        );
      }
      this.failing = true;
      return;
    }
    if (this.closed) return;
    if (this.warned) this.logger.log('The limit overrides are read again');
    this.failing = false;
    this.warned = false;
    this.install(this.checks.usable(listing));
  }

  /** Indexes `entries`, keeping what was built for those that did not change. */
  private install(entries: readonly OverrideEntry[]): void {
    const previous = this.byName;
    const byName = new Map<string, Named>();
    let soonest = Infinity;
    for (const entry of entries) {
      let named = byName.get(entry.policy);
      if (named === undefined) {
        named = { all: undefined, byPart: undefined };
        byName.set(entry.policy, named);
      }
      const active = reuse(previous.get(entry.policy), entry) ?? newActive(entry);
      if (entry.tracker === undefined) {
        named.all = active;
      } else {
        named.byPart ??= new Map();
        named.byPart.set(encodeKeyPart(entry.tracker), active);
        named.byPart.set(policyTrackerPart(entry.tracker, '')!, active);
      }
      if (entry.expiresInMs !== undefined) soonest = Math.min(soonest, entry.expiresInMs);
    }
    this.byName = byName;
    this.size = entries.length;
    this.version++;
    clearTimeout(this.expiryTimer);
    this.expiryTimer = undefined;
    if (soonest !== Infinity) {
      // Just past the end, so that the source no longer lists it.
      this.expiryTimer = setTimeout(() => void this.reload(), Math.min(soonest + 1, MAX_TIMER_MS));
      this.expiryTimer.unref();
    }
  }
}

function newActive(entry: OverrideEntry): Active {
  return { entry, built: new WeakMap() };
}

/** The override already in force for the same policy and tracker with the same values. */
function reuse(named: Named | undefined, entry: OverrideEntry): Active | undefined {
  if (named === undefined) return undefined;
  const active =
    entry.tracker === undefined ? named.all : named.byPart?.get(encodeKeyPart(entry.tracker));
  return active !== undefined &&
    active.entry.tracker === entry.tracker &&
    sameLimit(active.entry.limit, entry.limit)
    ? newActiveKeeping(active, entry)
    : undefined;
}

/** The same built policies, with the entry as listed now (its time left has changed). */
function newActiveKeeping(active: Active, entry: OverrideEntry): Active {
  return { entry, built: active.built };
}

function sameLimit(a: LimitOverride, b: LimitOverride): boolean {
  return a.threshold === b.threshold && a.periodMs === b.periodMs && a.burst === b.burst;
}

import { usableEntries } from './override-bounds.js';
import {
  type OverrideEntry,
  type OverrideListing,
  type SkippedOverride,
} from './override-source.js';
import { VanishedOverrides } from './vanished-overrides.js';

/** How many skipped entries a warning names; the count says how many more. */
const SKIPPED_SHOWN = 5;

/**
 * What the registry checks in each listing before it applies it: entries that are not valid
 * overrides are skipped, and overrides in force that vanished without a clear are told of; each
 * with one warning when it happens, not one per listing while it stays so.
 */
export class ListingChecks {
  private readonly vanished = new VanishedOverrides();
  /** The skipped entries warned of, by id and reason: each is said once while it stays. */
  private warnedSkipped = new Set<string>();

  constructor(private readonly logger: { warn(message: string): void }) {}

  /** The entries of `listing` to apply, once whatever is wrong with it has been said. */
  usable(listing: OverrideListing): OverrideEntry[] {
    const { entries, skipped } = usableEntries(listing);
    this.warnSkipped(skipped);
    const vanished = this.vanished.count(entries, listing.generation, Date.now());
    if (vanished > 0) this.warnVanished(vanished);
    return entries;
  }

  private warnSkipped(skipped: readonly SkippedOverride[]): void {
    const seen = new Set(skipped.map((s) => `${s.id} ${s.reason}`));
    const fresh = skipped.filter((s) => !this.warnedSkipped.has(`${s.id} ${s.reason}`));
    this.warnedSkipped = seen;
    if (fresh.length === 0) return;
    const shown = fresh.slice(0, SKIPPED_SHOWN).map((s) => `${s.id}: ${s.reason}`);
    if (fresh.length > SKIPPED_SHOWN) shown.push(`and ${fresh.length - SKIPPED_SHOWN} more`);
    this.logger.warn(
      `Skipped ${fresh.length} stored limit override(s) that are not valid (${shown.join('; ')}); ` +
        'the others apply. Remove them (RateLimitService.clearOverride, or HDEL on the hash) ' +
        'or set them again with RateLimitService.override',
    );
  }

  private warnVanished(count: number): void {
    this.logger.warn(
      `${count} limit override(s) in force vanished from Redis without being cleared: its data ` +
        'was flushed or evicted, or the server restarted without persistence or failed over ' +
        "before it had them. The policies' declared limits apply again; set the overrides again " +
        'with RateLimitService.override to restore them',
    );
  }
}

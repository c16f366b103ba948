import { type EvictionSetting, type RedisStore } from './redis.store.js';
import { type OutageLogger } from '../resilience/resilient.store.js';
import { isError } from '../errors.js';

/** The module's logger at bootstrap: Nest's `Logger`, whose `debug` says what could not be checked. */
export interface BootstrapLogger extends OutageLogger {
  debug?(message: string): void;
}

/** Where the docs say what to run instead; they ship in the package. */
export const EVICTION_DOCS = 'nest-rate-limit/docs/redis.md#eviction';

/**
 * Whether a server can drop rate-limit keys when full. Every key of the module has a TTL, so the
 * `volatile-*` policies evict them too, first of all on a server whose other keys have none.
 * Under `noeviction` a full server refuses writes instead, and `onStoreError` answers.
 */
export function evictsKeys({ policy, maxmemory }: EvictionSetting): boolean {
  return policy !== 'noeviction' && maxmemory > 0;
}

/**
 * Warns once, at bootstrap, when Redis can evict the module's keys: an evicted key silently resets
 * its limit or lock-out, which no log would show later. Checks every master of a cluster. Where
 * the configuration cannot be read (an ACL that refuses `CONFIG`, a managed service), says so at
 * debug level only. Resolves whatever happens.
 */
export async function warnIfEvicting(store: RedisStore, logger: BootstrapLogger): Promise<void> {
  let policies: EvictionSetting[];
  try {
    policies = await store.memoryPolicies();
  } catch (error) {
    const reason = isError(error) ? error.message : String(error);
    logger.debug?.(
      `Could not read Redis's maxmemory-policy (${reason}); make sure it cannot evict rate-limit keys: see ${EVICTION_DOCS}`,
    );
    return;
  }
  const evicting = policies.filter(evictsKeys);
  if (evicting.length === 0) return;
  const names = [...new Set(evicting.map((p) => p.policy))].join(', ');
  const where = policies.length > 1 ? ` on ${evicting.length} of ${policies.length} masters` : '';
  logger.warn(
    `Redis evicts keys when its memory is full (maxmemory-policy ${names}${where}): an evicted rate-limit key silently resets its limit or lock-out. Use noeviction, or a Redis instance of its own for rate limiting: see ${EVICTION_DOCS}`,
  );
}

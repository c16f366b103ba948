import { algorithmOf } from '../algorithms/registry.js';
import { type OverrideRegistry } from '../overrides/override-registry.js';
import { type RateLimitPolicy } from '../policy/rate-limit.policy.js';
import { checkCount, configError } from '../policy/validation.js';
import { encodeKeyPart, RouteKeys } from '../keys/route-keys.js';
import { type Limits } from '../store-contract/store-call.js';
import { PolicyCache } from './policy-cache.js';
import { type ConsumeOptions } from './service-options.js';

/**
 * What one `RateLimitService` call is decided on: the caller's policies, compiled once per policy
 * object, with the overrides in force put in place, a key per policy, and the costs.
 */
export class ServiceLimits {
  private readonly keys: RouteKeys;
  private readonly compiled: PolicyCache;

  constructor(
    keyPrefix: string,
    private readonly registry: OverrideRegistry,
  ) {
    this.keys = new RouteKeys(keyPrefix);
    this.compiled = new PolicyCache((policies) => registry.known.notePolicies(policies));
  }

  /** `leasesAllowed`: whether a `'concurrency'` policy may be given (acquire and run only). */
  of(
    where: string,
    key: string,
    policy: RateLimitPolicy | readonly RateLimitPolicy[],
    options: ConsumeOptions | undefined,
    leasesAllowed: boolean,
  ): Limits {
    if (typeof key !== 'string' || key === '')
      throw configError(where, 'key', key, 'a non-empty string');
    const compiled = this.compiled.get(policy, where);
    const { costs, leases } = compiled;
    let { policies } = compiled;
    // A lease nobody releases would hold its slot for a whole period.
    if (leases && !leasesAllowed) {
      throw configError(
        where,
        'algorithm',
        policies.find((p) => algorithmOf(p.algorithm).holdsLeases)!.algorithm,
        'used through acquire() or run(), which release the lease',
      );
    }
    const cost = options?.cost === undefined ? undefined : checkCount(options.cost, 'cost', where);
    const keys = this.keys.forService(key, policies);
    const registry = this.registry;
    // Keys first: an overridden policy keeps its id, so its key and the usage it holds stay.
    if (registry.size !== 0) {
      const part = registry.wantsTrackers(policies) ? encodeKeyPart(key) : undefined;
      policies = registry.apply(policies, part, true);
    }
    return { keys, policies, costs: cost === undefined ? costs : policies.map(() => cost) };
  }
}

import {
  type AlgorithmTwin,
  ms,
  NEVER,
  ON_RELEASE,
  type Params,
  type Stored,
} from '../algorithm.js';

/** The units a lease's name carries: after its last colon, or one without any (`units_of`). */
function unitsOf(member: string): number {
  const colon = member.lastIndexOf(':');
  return colon < 0 ? 1 : Number(member.slice(colon + 1));
}

/** A lease's name in the sorted set: its id, then `:<cost>` unless the cost is one. */
function memberOf(id: number, cost: number): string {
  return cost === 1 ? String(id) : `${id}:${cost}`;
}

/** The twin of the sorted set: each lease's name and when it expires (µs), and their units. */
export class Leases {
  readonly expiries = new Map<string, number>();
  /** Units held, like the `total` member. */
  total = 0;
  /** No lease expires before this; lets most checks skip the scan. */
  private soonest = Infinity;

  /** Drops the leases expired at `now`, like the trim in `zset_open`. */
  trim(now: number): void {
    if (now < this.soonest) return;
    let soonest = Infinity;
    for (const [member, expires] of this.expiries) {
      if (expires <= now) this.remove(member);
      else if (expires < soonest) soonest = expires;
    }
    this.soonest = soonest;
  }

  set(member: string, expires: number): void {
    if (!this.expiries.has(member)) this.total += unitsOf(member);
    this.expiries.set(member, expires);
    if (expires < this.soonest) this.soonest = expires;
  }

  remove(member: string): boolean {
    if (!this.expiries.delete(member)) return false;
    this.total -= unitsOf(member);
    return true;
  }
}

const stored = (leases: Leases, now: number, p: Params): Stored<Leases> => ({
  state: leases,
  expiresAtUs: now + ms(p.periodUs) * 1000,
});

/** Twin of `concurrency.lua`. */
export const concurrency: AlgorithmTwin<Leases, number> = {
  check(leases, now, p) {
    leases?.trim(now);
    const count = leases?.total ?? 0;
    if (p.cost > p.limit) return { allowed: false, retryAfterUs: NEVER, work: count };
    if (count + p.cost <= p.limit) return { allowed: true, retryAfterUs: 0, work: count };
    // A release may free a slot at any moment: a rejection promises no wait.
    return { allowed: false, retryAfterUs: ON_RELEASE, work: count };
  },

  after(_now, p, count) {
    return { remaining: p.limit - count - p.cost, resetAfterMs: ms(p.periodUs) };
  },

  free(leases, p, id) {
    if (p.cost > 0) while (leases?.expiries.has(memberOf(id, p.cost))) id++;
    return id;
  },

  commit(leases, now, p, count, lease) {
    const state = leases ?? new Leases();
    if (p.cost > 0) state.set(memberOf(lease!, p.cost), now + p.periodUs);
    return { ...stored(state, now, p), ...concurrency.after(now, p, count) };
  },

  release(leases, now, p, lease) {
    if (leases === undefined) return null;
    leases.trim(now);
    if (p.cost > 0) leases.remove(memberOf(lease, p.cost));
    // Redis drops the set once it holds nothing; otherwise the key's TTL stays as it is.
    return leases.total === 0 ? undefined : null;
  },

  renew(leases, now, p, lease) {
    leases?.trim(now);
    if (p.cost === 0) return stored(leases ?? new Leases(), now, p);
    const member = memberOf(lease, p.cost);
    if (leases === undefined || !leases.expiries.has(member)) return null;
    leases.set(member, now + p.periodUs);
    return stored(leases, now, p);
  },

  refund(leases, now, p) {
    if (leases === undefined) return undefined;
    leases.trim(now);
    // ZPOPMAX: the latest expiry first, the larger name among equals (compared as bytes).
    const last = [...leases.expiries].sort((a, b) => b[1] - a[1] || (b[0] > a[0] ? 1 : -1));
    let left = p.cost;
    for (const [member, expires] of last) {
      if (left === 0) break;
      const units = unitsOf(member);
      leases.remove(member);
      if (units > left) {
        const held = member.split(':').slice(0, 2).join(':');
        leases.set(`${held}:${units - left}`, expires);
      }
      left -= Math.min(units, left);
    }
    return leases.total === 0 ? undefined : null;
  },

  status(leases, now, p, count) {
    if (count === 0) return { remaining: p.limit, resetAfterMs: 0 };
    let last = 0;
    for (const expires of leases!.expiries.values()) if (expires > last) last = expires;
    return { remaining: Math.max(p.limit - count, 0), resetAfterMs: ms(last - now) };
  },
};

/**
 * Like `lease_id` in `concurrency.lua`: a decision's lease id, the first from `now` that is free
 * in every key of a policy whose twin hands out leases (the same id in each, so that one id frees
 * them all); undefined when no policy has leases. `twins[i]`, `policies[i]` and `states[i]` belong
 * to one policy.
 */
export function leaseId(
  twins: readonly AlgorithmTwin<unknown, unknown>[],
  policies: readonly Params[],
  states: readonly unknown[],
  now: number,
): number | undefined {
  let id = now;
  let any = false;
  let moved = true;
  while (moved) {
    moved = false;
    for (let i = 0; i < twins.length; i++) {
      const free = twins[i].free;
      if (free === undefined) continue;
      const next = free(states[i], policies[i], id);
      moved ||= next !== id;
      id = next;
      any = true;
    }
  }
  return any ? id : undefined;
}

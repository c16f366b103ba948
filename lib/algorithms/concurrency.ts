import { type AlgorithmTwin, ms, type Params, type Stored } from './algorithm.js';

/** A rejection promises no wait, since a release may free a slot at any moment: come back in 1 s. */
export const CONCURRENCY_RETRY_MS = 1000;

/** Lease members and when each expires (µs); the twin of the sorted set. */
export type Leases = Map<number, number>;

function trim(leases: Leases | undefined, now: number): void {
  if (leases === undefined) return;
  for (const [member, expires] of leases) if (expires <= now) leases.delete(member);
}

const stored = (leases: Leases, now: number, p: Params): Stored<Leases> => ({
  state: leases,
  expiresAtUs: now + ms(p.periodUs) * 1000,
});

/** Twin of `concurrency.lua`. */
export const concurrency: AlgorithmTwin<Leases, number> = {
  check(leases, now, p) {
    trim(leases, now);
    const count = leases?.size ?? 0;
    if (p.cost > p.limit) return { allowed: false, retryAfterMs: -1, work: count };
    if (count + p.cost <= p.limit) return { allowed: true, retryAfterMs: 0, work: count };
    return { allowed: false, retryAfterMs: CONCURRENCY_RETRY_MS, work: count };
  },

  after(_now, p, count) {
    return { remaining: p.limit - count - p.cost, resetAfterMs: ms(p.periodUs) };
  },

  free(leases, p, id) {
    let j = 0;
    while (j < p.cost) {
      if (leases?.has(id + j)) {
        id += j + 1;
        j = 0;
      } else {
        j++;
      }
    }
    return id;
  },

  commit(leases, now, p, count, lease) {
    const state = leases ?? new Map<number, number>();
    for (let j = 0; j < p.cost; j++) state.set(lease! + j, now + p.periodUs);
    return { ...stored(state, now, p), ...concurrency.after(now, p, count) };
  },

  release(leases, _now, p, lease) {
    if (leases === undefined) return null;
    for (let j = 0; j < p.cost; j++) leases.delete(lease + j);
    // Redis drops a sorted set once it is empty; otherwise the key's TTL stays as it is.
    return leases.size === 0 ? undefined : null;
  },

  renew(leases, now, p, lease) {
    for (let j = 0; j < p.cost; j++) {
      const expires = leases?.get(lease + j);
      if (expires === undefined || expires <= now) return null;
    }
    for (let j = 0; j < p.cost; j++) leases!.set(lease + j, now + p.periodUs);
    return stored(leases!, now, p);
  },

  refund(leases, now, p) {
    if (leases === undefined) return undefined;
    trim(leases, now);
    // ZPOPMAX: the latest expiry first, the larger member among equals.
    const last = [...leases].sort((a, b) => b[1] - a[1] || b[0] - a[0]).slice(0, p.cost);
    for (const [member] of last) leases.delete(member);
    return leases.size === 0 ? undefined : null;
  },

  status(leases, now, p, count) {
    if (count === 0) return { remaining: p.limit, resetAfterMs: 0 };
    let last = 0;
    for (const expires of leases!.values()) if (expires > last) last = expires;
    return { remaining: Math.max(p.limit - count, 0), resetAfterMs: ms(last - now) };
  },
};

/**
 * Reads what the sliding log and the concurrency leases keep in Redis: one sorted-set member per
 * decision or lease, weighted (`<mark or id>:<units>`, one unit without a colon), and, once a
 * member carries more than one unit, the member `total`, scored minus the units the set holds.
 */
import { type Cluster, type Redis } from 'ioredis';

export interface WeightedEntry {
  member: string;
  score: number;
  units: number;
}

/**
 * The units a key holds, as its `total` member says, or one per member in a plain set (no
 * `total`: every member carries one unit); 0 for no key.
 */
export async function unitsIn(client: Redis | Cluster, key: string): Promise<number> {
  const score = await client.zscore(key, 'total');
  return score === null ? client.zcard(key) : -Number(score);
}

/** The key's entries, oldest (or soonest to expire) first, without the `total` member. */
export async function entriesOf(client: Redis | Cluster, key: string): Promise<WeightedEntry[]> {
  const flat = await client.zrange(key, '0', '-1', 'WITHSCORES');
  const entries: WeightedEntry[] = [];
  for (let i = 0; i < flat.length; i += 2) {
    const member = flat[i];
    if (member === 'total') continue;
    const colon = member.lastIndexOf(':');
    const units = colon < 0 ? 1 : Number(member.slice(colon + 1));
    entries.push({ member, score: Number(flat[i + 1]), units });
  }
  return entries;
}

import { type Clock } from '../../store-contract/store.interface.js';
import { type RedisClient } from './clients/redis-client.js';

/** What a `RedisStore` is built from (see `redis.store.ts`). */
export interface RedisStoreOptions {
  /**
   * An ioredis or iovalkey `Redis` or `Cluster`, a node-redis client from `createClient()` or
   * `createCluster()` (v5 or later), or a Valkey GLIDE `GlideClient` or `GlideClusterClient`.
   * Connected by its owner, or by the module when it is handed over unopened (node-redis, or
   * GLIDE with `lazyConnect: true`).
   */
  client: RedisClient;
  /** Close the client in `close()`. Set by the module for clients it created itself. */
  ownsClient?: boolean;
  /**
   * How long the caller waits for a decision, in ms: a decision that reaches Redis later than
   * that (a paused server, a command a client queued or resent late) records nothing, because the
   * caller's fallback has answered it already. A copy of a decision that Redis ran is answered
   * by the decision's id, kept this long plus 500 ms (see docs/redis.md, Decision ids); a decision
   * whose reply was lost is sent again within this time, and given back if Redis ran it when the
   * client is back only later. The module sets it to its `timeout`. Unset: no deadline; ids are
   * kept 5 s, and lost decisions are sent again within 4 s.
   */
  answerWithinMs?: number;
  /**
   * Test clock in milliseconds, passed to the script instead of Redis `TIME`. Leave unset in
   * production: one Redis clock is what keeps every instance in agreement.
   */
  clock?: Clock;
  /**
   * Run decisions as Redis Functions (FCALL) where the server allows it, the default; false sends
   * them as scripts (EVALSHA) always. Where `FUNCTION` is refused (by an ACL, or
   * a managed service that disables it), scripts either way.
   */
  functions?: boolean;
  /**
   * The most decisions sent together in one call, default 8. The decisions that are ready in
   * the same turn of the event loop go out as one call of a batch function, which decides each
   * exactly as alone, in order: Redis and the client pay a call's cost once for all of them.
   * Nothing waits for a batch to fill, so a lone decision goes out at once. 1 sends each
   * decision as its own call. See docs/redis.md, Batches.
   */
  batchSize?: number;
  /**
   * On Redis Cluster: put every key in one of this many hash slots (1 to 1024), chosen by the
   * key's own, so that decisions on different trackers share a slot and go to their master in
   * one batch. Unset, the default layout: each tracker's keys have a slot of their own, and on a
   * cluster nearly every decision is a call of its own. Each group is a slot, which moves between
   * masters whole; setting it, or changing it, moves every key, so limits start counting afresh.
   * See docs/redis.md, Slot groups.
   *
   * @example
   * ```ts
   * new RedisStore({ client: new Cluster(nodes), slotGroups: 48 });
   * ```
   */
  slotGroups?: number;
}

/** What one Redis primary does when its memory is full; see `RedisStore.memoryPolicies`. */
export interface EvictionSetting {
  /** `noeviction`, or the keys it evicts: `allkeys-lru`, `volatile-ttl`, … */
  readonly policy: string;
  /** The memory limit in bytes; 0 for none, under which nothing is evicted. */
  readonly maxmemory: number;
}

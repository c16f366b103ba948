import { type ResolvedPolicy, type StoreErrorPolicy } from '../policy/rate-limit.policy.js';

export { type StoreErrorPolicy };

/** One policy's part of a decision. All times are whole milliseconds. */
export interface PolicyDecision {
  readonly policy: ResolvedPolicy;
  /** Whether this policy alone would allow the request. */
  readonly allowed: boolean;
  /** The policy's threshold. */
  readonly limit: number;
  /** Requests this policy still allows, after this decision. */
  readonly remaining: number;
  /** Time until the policy's quota is whole again. */
  readonly resetAfterMs: number;
  /** When rejected: time until it would allow the request; `Infinity` if it never can. 0 when allowed. */
  readonly retryAfterMs: number;
}

/**
 * The outcome of one rate-limit decision. With several policies, `limit`, `remaining` and
 * `resetAfterMs` come from the one with the fewest requests remaining.
 */
export interface RateLimitDecision {
  /** Whether the request may proceed. A rejected request consumes nothing from any policy. */
  readonly allowed: boolean;
  readonly limit: number;
  readonly remaining: number;
  readonly resetAfterMs: number;
  /**
   * When rejected: time until every violated policy would allow the request (the largest of their
   * waits); `Infinity` when its cost exceeds what some policy can ever allow. 0 when allowed.
   */
  readonly retryAfterMs: number;
  /** Each policy's own answer, in the order the policies were given. */
  readonly policies: readonly PolicyDecision[];
  /**
   * Set when the store failed and `onStoreError` answered instead: `'memory'` (this instance's
   * memory store decided), `'allow'` or `'deny'`. With policies that have their own
   * `onStoreError`, the strictest answer among the call's policies (`'deny'`, then `'memory'`).
   */
  readonly degraded?: StoreErrorPolicy;
  /**
   * Set on a route's decision when the request passed only because the policies that rejected
   * it are in shadow mode (`shadow: true`): it is what `onLimited` is told about such requests.
   */
  readonly shadow?: boolean;
  /**
   * Set when the request was booked ahead (`RateLimitService.acquire`, a route's `maxWait`, on
   * the bucket algorithms): how long it had to wait for its slot, in ms.
   */
  readonly waitMs?: number;
}

/**
 * Called with each error of the store (a refused connection, a timeout, an out-of-memory reply).
 * What it returns answers that decision, and the ones the circuit breaker answers without asking
 * the same server (a Cluster master) until its next error; nothing returned means `'memory'`.
 */
export type StoreErrorHandler = (error: Error) => StoreErrorPolicy | void;

/**
 * A place where rate-limit state lives. Implement it to plug in another backend; the module
 * ships `RedisStore` (shared by every instance) and `MemoryStore` (one process).
 *
 * @example
 * ```ts
 * RateLimitModule.forRoot({ store: new RedisStore({ client: new Redis(process.env.REDIS_URL) }) });
 * ```
 */
export interface RateLimitStore {
  /**
   * Decides, atomically, whether a request fits every policy: `costs[i]` requests against
   * `policies[i]` under `keys[i]`. It is recorded in all of them, or in none.
   */
  consume(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
  ): Promise<RateLimitDecision>;
  /**
   * The decision `consume` would return now (`remaining` is what would be left after it),
   * recording nothing. Needed by `RateLimitService.peek`.
   */
  peek?(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
  ): Promise<RateLimitDecision>;
  /**
   * Gives `costs[i]` back to each policy, never past a full quota, and answers with what is left:
   * allowed, with each policy's remaining quota. With `of`, the decision that counted the
   * request, exactly that request is given back where the algorithm can tell it apart (the
   * log's entry, the window it was counted in). Needed by `RateLimitService.refund` and by
   * policies that count only some outcomes.
   */
  refund?(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    of?: RateLimitDecision,
  ): Promise<RateLimitDecision>;
  /** Forgets the keys' state; answers as `refund` does. Needed by `RateLimitService.reset`. */
  reset?(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
  ): Promise<RateLimitDecision>;
  /**
   * Locks every key out for `durationMs` from now, as a policy's `blockDuration` would, and
   * answers with the lock-out. Needed by `RateLimitService.block`.
   */
  block?(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    durationMs: number,
  ): Promise<RateLimitDecision>;
  /**
   * Consumes as `consume` does, except that the bucket algorithms also allow a request that fits
   * within `maxWaitMs`, booking its slot now: the decision's `waitMs` says how long until it
   * begins. Needed by `RateLimitService.acquire` and by routes with `maxWait`.
   */
  reserve?(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    maxWaitMs: number,
  ): Promise<RateLimitDecision>;
  /**
   * Frees the concurrency leases `of` took, and answers with what is left. Needed by
   * `'concurrency'` policies.
   */
  release?(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    of: RateLimitDecision,
  ): Promise<RateLimitDecision>;
  /**
   * Extends the concurrency leases `of` took by a period from now; `allowed` is false when they
   * are gone (expired or reset). Needed by `'concurrency'` policies.
   */
  renew?(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    of: RateLimitDecision,
  ): Promise<RateLimitDecision>;
  /**
   * Settles a reservation (`RateLimitService.reserve`): `deltas[i]` is what the call used beyond
   * its estimate under `policies[i]`. A positive delta is charged even past the limit (a bucket
   * goes into debt; a window records it in the window `of` was counted in); a negative one is
   * given back as `refund` gives back `of`'s request; 0 leaves the policy alone. Answers with
   * what is left, as `refund` does: `allowed` is false while a policy is over its limit. Needed
   * by `RateLimitService.reserve` and by route policies with `settle`.
   */
  settle?(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    deltas: readonly number[],
    of: RateLimitDecision,
  ): Promise<RateLimitDecision>;
  /**
   * Names the server that decides on `keys`, so that failures are judged per server: when one
   * fails, only the decisions that go to it are answered by `onStoreError`. `RedisStore` answers
   * the `host:port` of a Cluster master, and '' for a single server. Unset: one server. Called on
   * every decision, so keep it cheap.
   *
   * @example
   * ```ts
   * // A store sharded by the first character of the key, one server per shard:
   * nodeOf: (keys) => SHARDS[keys[0].charCodeAt(0) % SHARDS.length].address,
   * ```
   */
  nodeOf?(keys: readonly string[]): string;
  /**
   * Resolves when the server `node` (as `nodeOf` names it) answers within `withinMs`, and rejects
   * otherwise. Asked when a decision got no answer in time and nothing else shows its server
   * alive: the failure counts against the server only when it does not answer this either, so
   * that a decision held up on its own (a Cluster slot half-way through a migration) falls back
   * alone. `RedisStore` sends PING to the master. Unset: every such failure counts.
   */
  pingNode?(node: string, withinMs: number): Promise<unknown>;
  /** Releases what the store holds. Called on application shutdown for stores the module created. */
  close?(): Promise<void>;
}

/** Injection token for the active store: `@Inject(RateLimitStore) store: RateLimitStore`. */
export const RateLimitStore = Symbol('RateLimitStore');

/** Returns the current time in milliseconds (fractions allowed). Tests inject one; see `clock` options. */
export type Clock = () => number;

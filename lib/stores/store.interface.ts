import { type ResolvedPolicy } from '../rate-limit.policy.js';

/** The outcome of one rate-limit decision. All times are whole milliseconds. */
export interface RateLimitDecision {
  /** Whether the request may proceed. A rejected request consumes nothing. */
  allowed: boolean;
  /** The policy's threshold. */
  limit: number;
  /** Requests still allowed in the current window after this decision. */
  remaining: number;
  /** Time until the window holds no requests and the full quota is back. */
  resetAfterMs: number;
  /** When rejected: time until the same request would be allowed. 0 when allowed. */
  retryAfterMs: number;
}

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
   * Decides, atomically, whether `cost` more requests fit `policy` for `key`, and records them
   * only when they do.
   */
  consume(key: string, policy: ResolvedPolicy, cost: number): Promise<RateLimitDecision>;
  /** Releases what the store holds. Called on application shutdown for stores the module created. */
  close?(): Promise<void>;
}

/** Injection token for the active store: `@Inject(RateLimitStore) store: RateLimitStore`. */
export const RateLimitStore = Symbol('RateLimitStore');

/** Returns the current time in milliseconds (fractions allowed). Tests inject one; see `clock` options. */
export type Clock = () => number;

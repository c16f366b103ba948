import { type Duration } from '../policy/rate-limit.policy.js';

/** Options of one `consume()`, `peek()` or `refund()` call. */
export interface ConsumeOptions {
  /**
   * How many requests this call counts as (or gives back), for every policy. Default: each
   * policy's `cost`, else 1.
   */
  cost?: number;
}

/** Options of one `acquire()` or `run()` call. */
export interface AcquireOptions extends ConsumeOptions {
  /**
   * Longest time to wait for a slot. A call that cannot proceed within it is rejected at once,
   * not after waiting. A number means seconds; 0 never waits. Default: the longest period
   * among the policies.
   */
  maxWait?: Duration;
  /** Cancels the wait: `acquire` rejects with the signal's reason, and a booked slot is given back. */
  signal?: AbortSignal;
}

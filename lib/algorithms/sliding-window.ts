import { type RateLimitDecision } from '../stores/store.interface.js';

/**
 * In-process twin of `sliding-window.lua`: the same arithmetic on an array of arrival times.
 * Every formula here mirrors a line of the script, so both stores answer alike.
 */
export class SlidingWindowLog {
  /** Arrival times in microseconds, ascending, from `head` on. */
  private times: number[] = [];
  private head = 0;

  /** When the newest entry leaves the window; the store evicts the log after this. */
  expiresAtUs = 0;

  consume(nowUs: number, windowUs: number, limit: number, cost: number): RateLimitDecision {
    this.trim(nowUs - windowUs);
    const count = this.times.length - this.head;

    if (count + cost <= limit) {
      for (let i = 0; i < cost; i++) this.insert(nowUs);
      const windowMs = Math.ceil(windowUs / 1000);
      this.expiresAtUs = Math.max(this.expiresAtUs, nowUs + windowMs * 1000);
      return {
        allowed: true,
        limit,
        remaining: limit - count - cost,
        retryAfterMs: 0,
        resetAfterMs: windowMs,
      };
    }

    let retryAfterMs = -1;
    if (cost <= limit) {
      const blocker = this.times[this.head + count + cost - limit - 1];
      retryAfterMs = Math.ceil((blocker + windowUs - nowUs) / 1000);
    }
    const newest = count > 0 ? this.times[this.times.length - 1] : undefined;
    const resetAfterMs = newest === undefined ? 0 : Math.ceil((newest + windowUs - nowUs) / 1000);
    return {
      allowed: false,
      limit,
      remaining: Math.max(limit - count, 0),
      retryAfterMs,
      resetAfterMs,
    };
  }

  get size(): number {
    return this.times.length - this.head;
  }

  /** Drops arrivals at or before `cutoffUs`, like ZREMRANGEBYSCORE -inf cutoff. */
  private trim(cutoffUs: number): void {
    const times = this.times;
    let head = this.head;
    while (head < times.length && times[head] <= cutoffUs) head++;
    // Compact now and then so the array does not grow with every request ever seen.
    if (head > 64 && head * 2 > times.length) {
      this.times = times.slice(head);
      head = 0;
    }
    this.head = head;
  }

  /** Keeps the array sorted even if a test clock steps backwards, as a sorted set would. */
  private insert(t: number): void {
    const times = this.times;
    let i = times.length;
    while (i > this.head && times[i - 1] > t) i--;
    if (i === times.length) times.push(t);
    else times.splice(i, 0, t);
  }
}

import { type AlgorithmTwin, ms } from './algorithm.js';

/** Arrival times in microseconds, ascending from `head`; the twin of the sorted set. */
export class ArrivalLog {
  times: number[] = [];
  head = 0;

  get size(): number {
    return this.times.length - this.head;
  }

  /** Drops arrivals at or before `cutoffUs`, like ZREMRANGEBYSCORE -inf cutoff. */
  trim(cutoffUs: number): void {
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

  /** Drops the `count` latest arrivals, like ZPOPMAX key count. */
  popNewest(count: number): void {
    this.times.length = Math.max(this.head, this.times.length - count);
  }

  /** Drops up to `count` arrivals at exactly `t`, like ZREM of ZRANGEBYSCORE t t LIMIT 0 count. */
  removeAt(t: number, count: number): void {
    const times = this.times;
    let first = this.head;
    while (first < times.length && times[first] < t) first++;
    let last = first;
    while (last < times.length && last - first < count && times[last] === t) last++;
    times.splice(first, last - first);
  }

  /** Keeps the order even if a test clock steps backwards, as a sorted set would. */
  insert(t: number): void {
    const times = this.times;
    let i = times.length;
    while (i > this.head && times[i - 1] > t) i--;
    if (i === times.length) times.push(t);
    else times.splice(i, 0, t);
  }
}

/** Twin of `sliding-window.lua`. */
export const slidingWindow: AlgorithmTwin<ArrivalLog, number> = {
  check(log, now, p) {
    log?.trim(now - p.periodUs);
    const count = log?.size ?? 0;
    if (p.cost > p.limit) return { allowed: false, retryAfterMs: -1, work: count };
    if (count + p.cost <= p.limit) return { allowed: true, retryAfterMs: 0, work: count };
    const blocker = log!.times[log!.head + count + p.cost - p.limit - 1];
    return { allowed: false, retryAfterMs: ms(blocker + p.periodUs - now), work: count };
  },

  after(_now, p, count) {
    return { remaining: p.limit - count - p.cost, resetAfterMs: ms(p.periodUs) };
  },

  commit(log, now, p, count) {
    const state = log ?? new ArrivalLog();
    for (let i = 0; i < p.cost; i++) state.insert(now);
    return {
      state,
      expiresAtUs: now + ms(p.periodUs) * 1000,
      ...slidingWindow.after(now, p, count),
    };
  },

  refund(log, now, p, at) {
    if (log === undefined) return undefined;
    log.trim(now - p.periodUs);
    if (at === undefined) log.popNewest(p.cost);
    else log.removeAt(at, p.cost);
    if (log.size === 0) return undefined;
    // Like Lua, which leaves the key's TTL alone: it still covers the newest entry left.
    return { state: log, expiresAtUs: log.times[log.times.length - 1] + ms(p.periodUs) * 1000 };
  },

  status(log, now, p, count) {
    if (count === 0) return { remaining: p.limit, resetAfterMs: 0 };
    const newest = log!.times[log!.times.length - 1];
    return { remaining: Math.max(p.limit - count, 0), resetAfterMs: ms(newest + p.periodUs - now) };
  },
};

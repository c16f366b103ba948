import { type AlgorithmTwin, ms, NEVER } from '../algorithm.js';

/**
 * The twin of the sorted set: one entry per allowed decision, oldest first from `head`, each with
 * its arrival time (µs), its units and its mark (the running count of units recorded up to and
 * including it). Arrival times are unique and ascending, and so are marks.
 */
export class ArrivalLog {
  times: number[] = [];
  units: number[] = [];
  marks: number[] = [];
  head = 0;
  /** Units in the log, like the `total` member. */
  total = 0;

  get size(): number {
    return this.times.length - this.head;
  }

  get last(): number {
    return this.times.length - 1;
  }

  /** Drops arrivals at or before `cutoffUs`, like the trim in `zset_open`. */
  trim(cutoffUs: number): void {
    const times = this.times;
    let head = this.head;
    while (head < times.length && times[head] <= cutoffUs) this.total -= this.units[head++];
    // Compact now and then so the arrays do not grow with every request ever seen.
    if (head > 64 && head * 2 > times.length) {
      this.times = times.slice(head);
      this.units = this.units.slice(head);
      this.marks = this.marks.slice(head);
      head = 0;
    }
    this.head = head;
  }

  /** Records `cost` units at `t`, in the newest entry when that is not older; returns its time. */
  add(t: number, cost: number): number {
    const last = this.last;
    this.total += cost;
    if (this.size > 0 && this.times[last] >= t) {
      this.units[last] += cost;
      this.marks[last] += cost;
      return this.times[last];
    }
    this.push(t, cost, (this.size > 0 ? this.marks[last] : 0) + cost);
    return t;
  }

  /** Adds `cost` units to the newest entry, whose mark rises by them, as `sw.charge` does. */
  join(cost: number): void {
    this.units[this.last] += cost;
    this.marks[this.last] += cost;
    this.total += cost;
  }

  /** The arrival of the oldest entry whose leaving leaves at most `room` units after it. */
  blocker(room: number): number {
    const floor = this.marks[this.last] - room;
    let lo = this.head;
    let hi = this.last;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      if (this.marks[mid] >= floor) hi = mid;
      else lo = mid + 1;
    }
    return this.times[lo];
  }

  /** The index of the entry that arrived at `t`, or -1. */
  find(t: number): number {
    let lo = this.head;
    let hi = this.last;
    while (lo <= hi) {
      const mid = Math.floor((lo + hi) / 2);
      if (this.times[mid] === t) return mid;
      if (this.times[mid] < t) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  /** Takes up to `wanted` units off entry `i`, as `sw_take` does; returns how many. */
  take(i: number, wanted: number): number {
    const units = this.units[i];
    if (units <= wanted) {
      this.times.splice(i, 1);
      this.units.splice(i, 1);
      this.marks.splice(i, 1);
      this.total -= units;
      return units;
    }
    this.units[i] -= wanted;
    if (i === this.last) this.marks[i] -= wanted;
    this.total -= wanted;
    return wanted;
  }

  private push(t: number, units: number, mark: number): void {
    this.times.push(t);
    this.units.push(units);
    this.marks.push(mark);
  }
}

/** Twin of `sliding-window.lua`. */
export const slidingWindow: AlgorithmTwin<ArrivalLog, number> = {
  check(log, now, p) {
    log?.trim(now - p.periodUs);
    const count = log?.total ?? 0;
    if (p.cost > p.limit) return { allowed: false, retryAfterUs: NEVER, work: count };
    if (count + p.cost <= p.limit) return { allowed: true, retryAfterUs: 0, work: count };
    const blocker = log!.blocker(p.limit - p.cost);
    return { allowed: false, retryAfterUs: blocker + p.periodUs - now, work: count };
  },

  after(_now, p, count) {
    return { remaining: p.limit - count - p.cost, resetAfterMs: ms(p.periodUs) };
  },

  commit(log, now, p, count) {
    const state = log ?? new ArrivalLog();
    const at = p.cost > 0 ? state.add(now, p.cost) : now;
    return {
      state,
      expiresAtUs: now + ms(at + p.periodUs - now) * 1000,
      ...slidingWindow.after(now, p, count),
    };
  },

  refund(log, now, p, at) {
    if (log === undefined) return undefined;
    log.trim(now - p.periodUs);
    if (log.total === 0) return undefined;
    if (at !== undefined) {
      const i = log.find(at);
      if (i < 0) return null;
      log.take(i, p.cost);
    } else {
      let left = p.cost;
      while (left > 0 && log.total > 0) left -= log.take(log.last, left);
    }
    if (log.total === 0) return undefined;
    // Like Lua, which leaves the key's TTL alone: it still covers the newest entry left.
    return { state: log, expiresAtUs: log.times[log.last] + ms(p.periodUs) * 1000 };
  },

  charge(log, now, p, at) {
    log?.trim(now - p.periodUs);
    // The reservation's entry has left the window, or was given back: its usage counts no more.
    if (at !== undefined && (log === undefined || log.total === 0 || log.find(at) < 0)) {
      return null;
    }
    if (log === undefined || log.total === 0) return slidingWindow.commit(log, now, p, 0);
    log.join(p.cost);
    const newest = log.times[log.last];
    return { state: log, expiresAtUs: now + ms(newest + p.periodUs - now) * 1000 };
  },

  status(log, now, p, count) {
    if (count === 0) return { remaining: p.limit, resetAfterMs: 0 };
    const newest = log!.times[log!.last];
    return { remaining: Math.max(p.limit - count, 0), resetAfterMs: ms(newest + p.periodUs - now) };
  },
};

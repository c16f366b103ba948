/**
 * The most frequent keys of a stream in bounded memory: the Space-Saving summary (Metwally,
 * Agrawal and El Abbadi, 2005). It keeps at most `capacity` counters. A key not kept takes the
 * place of the least counted one and starts from that count, which it remembers as its error, so
 * a count is never below the truth and never more than its error above it; no error exceeds
 * (events seen) / capacity. Any key seen more often than that is always kept.
 */

/** One key as a summary counts it: the truth lies in [count - error, count]. */
export interface TopEntry {
  readonly key: string;
  readonly count: number;
  readonly error: number;
  /** When it was last counted (ms), the latest among the summaries merged. */
  readonly last: number;
}

/** A summary as it travels between instances: its entries, and what a key not among them may have. */
export interface TopSummary {
  readonly entries: readonly TopEntry[];
  /** A key not in `entries` was counted at most this often (0 while the summary has room). */
  readonly unseenAtMost: number;
}

interface Counter {
  key: string;
  count: number;
  error: number;
  last: number;
  /** Its place in the heap. */
  at: number;
}

export class TopK {
  private readonly byKey = new Map<string, Counter>();
  /** A min-heap by count: the root is the counter a new key replaces. */
  private readonly heap: Counter[] = [];

  constructor(private readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`TopK capacity must be a positive integer, got ${capacity}`);
    }
  }

  /** Counts `key` `times` more, at `now` (ms). */
  add(key: string, now: number, times = 1): void {
    let counter = this.byKey.get(key);
    if (counter === undefined) {
      if (this.heap.length < this.capacity) {
        // It counts 0 so far, the least there is: it rises to the root, then sinks to its place.
        counter = { key, count: 0, error: 0, last: now, at: this.heap.length };
        this.heap.push(counter);
        this.rise(counter.at);
      } else {
        counter = this.heap[0];
        this.byKey.delete(counter.key);
        counter.key = key;
        counter.error = counter.count;
      }
      this.byKey.set(key, counter);
    }
    counter.count += times;
    counter.last = now;
    this.sink(counter.at);
  }

  /** The summary: every kept key, most counted first. */
  summary(): TopSummary {
    const entries = this.heap
      .map(({ key, count, error, last }) => ({ key, count, error, last }))
      .sort((a, b) => b.count - a.count);
    const unseenAtMost = this.heap.length < this.capacity ? 0 : this.heap[0].count;
    return { entries, unseenAtMost };
  }

  /** Moves the counter at `i` up the heap while its parent counts more. */
  private rise(i: number): void {
    const heap = this.heap;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent].count <= heap[i].count) return;
      this.swap(i, parent);
      i = parent;
    }
  }

  /** Moves the counter at `i` down the heap while a child counts less. */
  private sink(i: number): void {
    const heap = this.heap;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) return;
      const right = left + 1;
      const least = right < heap.length && heap[right].count < heap[left].count ? right : left;
      if (heap[least].count >= heap[i].count) return;
      this.swap(i, least);
      i = least;
    }
  }

  private swap(i: number, j: number): void {
    const heap = this.heap;
    const a = heap[i];
    heap[i] = heap[j];
    heap[j] = a;
    heap[i].at = i;
    a.at = j;
  }
}

/**
 * Several summaries as one, for the same stream split by time or by instance: a key's count is
 * the sum of its counts, plus, where a summary does not hold it, what that summary's unseen key
 * may have had (added to its error too, since the truth there may be 0). The `limit` most counted
 * come first.
 */
export function mergeSummaries(summaries: readonly TopSummary[], limit: number): TopEntry[] {
  const merged = new Map<string, { count: number; error: number; last: number; kept: number }>();
  for (const summary of summaries) {
    for (const entry of summary.entries) {
      const into = merged.get(entry.key);
      if (into === undefined) {
        merged.set(entry.key, { ...entry, kept: 1 });
      } else {
        into.count += entry.count;
        into.error += entry.error;
        into.last = Math.max(into.last, entry.last);
        into.kept++;
      }
    }
  }
  const full = summaries.filter((summary) => summary.unseenAtMost > 0);
  const keptBy = full.map((summary) => new Set(summary.entries.map((entry) => entry.key)));
  const entries: TopEntry[] = [];
  for (const [key, { count, error, last, kept }] of merged) {
    let unseen = 0;
    // Every summary that kept the key is counted already; look only when a full one did not.
    if (kept < summaries.length) {
      for (const [i, summary] of full.entries()) {
        if (!keptBy[i].has(key)) unseen += summary.unseenAtMost;
      }
    }
    entries.push({ key, count: count + unseen, error: error + unseen, last });
  }
  return entries.sort((a, b) => b.count - a.count || b.last - a.last).slice(0, limit);
}

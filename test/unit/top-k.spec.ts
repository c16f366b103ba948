/**
 * The console's top list: the Space-Saving summary against exact counts of random streams, alone
 * and merged across summaries (minutes, instances), and the minute windows built on it.
 */
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { LimitedTrackers } from '../../lib/activity/limited-trackers.js';
import { mergeSummaries, TopK, type TopEntry } from '../../lib/activity/top-k.js';

/** Exact counts of a stream of keys. */
function countsOf(stream: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const key of stream) counts.set(key, (counts.get(key) ?? 0) + 1);
  return counts;
}

/** Streams over a skewed alphabet: a few keys often, many keys rarely. */
const streams = fc.array(
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom('hot-1', 'hot-2', 'hot-3') },
    { weight: 2, arbitrary: fc.integer({ min: 0, max: 200 }).map((i) => `cold-${i}`) },
  ),
  { maxLength: 600 },
);

/** Every entry brackets the truth, and every key above `bound` is among the entries. */
function expectWithinBounds(
  entries: readonly TopEntry[],
  truth: Map<string, number>,
  bound: number,
) {
  for (const { key, count, error } of entries) {
    const real = truth.get(key) ?? 0;
    expect(count).toBeGreaterThanOrEqual(real);
    expect(count - error).toBeLessThanOrEqual(real);
    expect(error).toBeLessThanOrEqual(bound);
  }
  const kept = new Set(entries.map((entry) => entry.key));
  for (const [key, real] of truth) if (real > bound) expect(kept.has(key)).toBe(true);
}

describe('TopK', () => {
  it('never counts a key below the truth nor more than its error above, and keeps every key above events / capacity', () => {
    fc.assert(
      fc.property(streams, fc.integer({ min: 1, max: 12 }), (stream, capacity) => {
        const top = new TopK(capacity);
        stream.forEach((key, i) => top.add(key, i));
        const { entries } = top.summary();
        expect(entries.length).toBeLessThanOrEqual(capacity);
        expectWithinBounds(entries, countsOf(stream), stream.length / capacity);
      }),
    );
  });

  it('merged across summaries of parts of a stream, still brackets the truth and keeps the heavy keys', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(streams, fc.integer({ min: 1, max: 12 })), {
          minLength: 1,
          maxLength: 5,
        }),
        (parts) => {
          const summaries = parts.map(([stream, capacity]) => {
            const top = new TopK(capacity);
            stream.forEach((key, i) => top.add(key, i));
            return top.summary();
          });
          const truth = countsOf(parts.flatMap(([stream]) => stream));
          const bound = parts.reduce(
            (sum, [stream, capacity]) => sum + stream.length / capacity,
            0,
          );
          expectWithinBounds(mergeSummaries(summaries, Infinity), truth, bound);
        },
      ),
    );
  });

  it('refuses a capacity that is not a positive integer', () => {
    expect(() => new TopK(0)).toThrow('TopK capacity must be a positive integer, got 0');
  });
});

describe('LimitedTrackers', () => {
  const MINUTE = 60_000;

  it('puts a flooding tracker first among thousands that are limited once each', () => {
    const trackers = new LimitedTrackers(32);
    const start = 10 * MINUTE;
    for (let i = 0; i < 5_000; i++) {
      trackers.count(
        LimitedTrackers.subject('GET /items', 'per-ip') + `ip:10.0.${i >> 8}.${i & 255}`,
        start + i,
      );
      if (i % 10 === 0)
        trackers.count(
          LimitedTrackers.subject('POST /login', 'login') + 'ip:203.0.113.7',
          start + i,
        );
    }
    const [first, second] = LimitedTrackers.top(trackers.recent(start + 5_000, 1), 20);
    expect(first).toMatchObject({
      tracker: 'ip:203.0.113.7',
      route: 'POST /login',
      policy: 'login',
      lastLimitedAt: start + 4_990,
    });
    expect(first.limited - first.error).toBeLessThanOrEqual(500);
    expect(first.limited).toBeGreaterThanOrEqual(500);
    expect(first.error).toBeLessThanOrEqual(5_500 / 32);
    expect(second.limited).toBeLessThan(first.limited);
  });

  it('counts a window over its own minutes: 1 minute holds the current minute alone, 16 all of them', () => {
    const trackers = new LimitedTrackers();
    for (let minute = 0; minute < 20; minute++) {
      for (let i = 0; i <= minute; i++)
        trackers.count(LimitedTrackers.subject('r', 'p') + 't', minute * MINUTE + i);
    }
    const now = 19 * MINUTE + 30_000;
    const limitedIn = (minutes: number) =>
      LimitedTrackers.top(trackers.recent(now, minutes), 1)[0].limited;
    expect(limitedIn(1)).toBe(20);
    expect(limitedIn(5)).toBe(20 + 19 + 18 + 17 + 16);
    // Only 16 minutes are kept (the console's 15-minute window and the minute under way), the
    // oldest dropped as new ones begin.
    expect(limitedIn(16)).toBe((20 * 21) / 2 - (4 * 5) / 2);
    expect(limitedIn(60)).toBe(limitedIn(16));
  });

  it('keeps trackers, routes and policies apart, whatever characters they hold', () => {
    const trackers = new LimitedTrackers();
    trackers.count(LimitedTrackers.subject('c', 'p') + 'a|b', 0);
    trackers.count(LimitedTrackers.subject('b|c', 'p') + 'a', 0);
    trackers.count(LimitedTrackers.subject('c', 'p') + 'a", "b', 0);
    const top = LimitedTrackers.top(trackers.recent(0), 20);
    expect(top.map(({ tracker, route }) => [tracker, route]).sort()).toEqual(
      [
        ['a', 'b|c'],
        ['a", "b', 'c'],
        ['a|b', 'c'],
      ].sort(),
    );
  });
});

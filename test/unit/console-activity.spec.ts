/**
 * What the console keeps per instance: the tracker read back from a key of every route shape (and
 * a key rebuilt from it), decisions per route and outcome in 10 s buckets, and the feed that
 * tells a rejection from a shadow policy's and a degraded answer.
 */
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { DecisionFeed } from '../../lib/activity/decision-feed.js';
import { LimitedTrackers } from '../../lib/activity/limited-trackers.js';
import { Outcome, OutcomeRates } from '../../lib/activity/outcome-rates.js';
import { RouteDirectory } from '../../lib/activity/route-directory.js';
import {
  decodeKeyPart,
  encodeKeyPart,
  policyTrackerPart,
  RouteKeys,
} from '../../lib/keys/route-keys.js';
import { resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import { type RateLimitDecision } from '../../lib/store-contract/store.interface.js';

const API = resolvePolicy({ name: 'api.v1', period: '1m', threshold: 3 }, 'test');
const keys = new RouteKeys('rl');
/** Trackers of every kind of character: unsafe ones, surrogates, IPv6 colons, long ones. */
const trackers = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('ip:2001:db8::1', 'user:a|b}{c', '#not-a-digest', '%41'),
  fc.string({ minLength: 201, maxLength: 260 }),
);

/** Every route key shape, for a tracker's part. */
function shapes(part: string, route = 'GET /items/:id') {
  return [
    keys.routeHead(route) + part + RouteKeys.tail(API, 0),
    keys.withTracker(route, true, part, API, 0),
    keys.scopedHead(part) + RouteKeys.sharedTail('s|shared', API),
    keys.scopedHead(part) + RouteKeys.scopedRouteTail(RouteKeys.scopedRoute(route), API, 0),
  ];
}

describe('a tracker read back from a route key', () => {
  it('is the value the key was made from, on every shape, or the digest of a long one', () => {
    fc.assert(
      fc.property(trackers, (tracker) => {
        const part = encodeKeyPart(tracker);
        for (const key of shapes(part)) {
          const shown = RouteDirectory.trackerOf(key, API, 0);
          expect(shown).toBe(part.startsWith('#') ? part : tracker);
        }
      }),
    );
  });

  it('rebuilds the same key from what it shows, so that the console acts on that key', () => {
    fc.assert(
      fc.property(trackers, fc.boolean(), (tracker, own) => {
        const part = own ? policyTrackerPart(tracker, 'test') : encodeKeyPart(tracker);
        if (part === undefined) return; // an empty policy tracker counts the module's
        for (const key of shapes(part)) {
          const directory = new RouteDirectory();
          directory.note(
            'r',
            { keys: [key], policies: [API], costs: [1] },
            own ? [() => 'x'] : undefined,
          );
          const [template] = directory.known()[0].keys;
          const shown = RouteDirectory.trackerOf(key, API, 0)!;
          expect(RouteDirectory.keyFor(template, shown)).toBe(key);
        }
      }),
    );
  });

  it('gives nothing back for a digest or a stand-in', () => {
    expect(decodeKeyPart(encodeKeyPart('x'.repeat(300)))).toBeUndefined();
    expect(decodeKeyPart('%!ip:1.2.3.4')).toBeUndefined();
    expect(decodeKeyPart('a%7Cb%u00E9')).toBe('a|b\u00e9');
  });
});

describe('decisions per route and outcome', () => {
  it('counts each decision in its 10 s bucket, and charts the sum of every instance as a rate', () => {
    const minute = 29_000_000;
    const start = minute * 60_000;
    const a = new OutcomeRates();
    const b = new OutcomeRates();
    for (let i = 0; i < 30; i++) a.count('GET /a', Outcome.Allowed, start + 1000 + i);
    for (let i = 0; i < 10; i++) b.count('GET /a', Outcome.Limited, start + 15_000);
    b.count('GET /b', Outcome.Degraded, start + 59_999);
    expect(a.minute(minute)['GET /a'].slice(0, 3)).toEqual([30, 0, 0]);
    expect(b.minute(minute)['GET /a'].slice(3, 6)).toEqual([0, 10, 0]);
    expect(a.minute(minute - 1)).toEqual({});

    const now = start + 60_000 - 1;
    const chart = OutcomeRates.chart(
      [
        { minute, counts: a.minute(minute) },
        { minute, counts: b.minute(minute) },
      ],
      now,
    );
    expect(chart.routes.map((r) => r.route)).toEqual(['GET /a', 'GET /b']);
    const [routeA, routeB] = chart.routes;
    expect(routeA.allowed.length).toBe(90);
    // The last six buckets are this minute's: 30 allowed in the first, 10 limited in the second.
    expect(routeA.allowed.slice(-6)).toEqual([3, 0, 0, 0, 0, 0]);
    expect(routeA.limited.slice(-6)).toEqual([0, 1, 0, 0, 0, 0]);
    expect(routeB.degraded.slice(-6)).toEqual([0, 0, 0, 0, 0, 0.1]);
    expect(chart.fromMs).toBe(now - (now % 10_000) - 89 * 10_000);
  });

  it('forgets a bucket once its slot comes round again', () => {
    const rates = new OutcomeRates();
    rates.count('r', Outcome.Allowed, 0);
    rates.count('r', Outcome.Allowed, 15 * 60_000);
    expect(rates.minute(15)['r'].slice(0, 3)).toEqual([1, 0, 0]);
    expect(rates.minute(0)).toEqual({});
  });
});

describe('the decision feed', () => {
  const decision = (allowed: boolean[], extra: Partial<RateLimitDecision> = {}) =>
    ({
      allowed: allowed.every(Boolean),
      limit: 3,
      remaining: 0,
      resetAfterMs: 0,
      retryAfterMs: 0,
      policies: allowed.map((a) => ({
        policy: API,
        allowed: a,
        limit: 3,
        remaining: 0,
        resetAfterMs: 0,
        retryAfterMs: 0,
      })),
      ...extra,
    }) as RateLimitDecision;
  const limits = (tracker: string) => ({
    keys: [
      keys.routeHead('GET /a') + encodeKeyPart(tracker) + RouteKeys.tail(API, 0),
      keys.routeHead('GET /a') + encodeKeyPart(tracker) + RouteKeys.tail(API, 1),
    ],
    policies: [API, API],
    costs: [1, 1],
  });

  it('lists the tracker an enforced policy turned away, not one a shadow policy would have', () => {
    const feed = new DecisionFeed(() => 120_000);
    const rejected = decision([true, false]);
    feed.decided('GET /a', limits('ip:1'), rejected, rejected);
    // Only the shadow policy (index 1) rejects: the client was let through.
    const shadowOnly = decision([true, false], { allowed: true, shadow: true });
    feed.decided('GET /a', limits('ip:2'), shadowOnly, decision([true]), undefined, [false, true]);
    const degraded = decision([false], { degraded: 'deny' });
    feed.decided('GET /a', limits('ip:3'), degraded, degraded);

    const top = LimitedTrackers.top(
      feed.limited.recent(120_000, undefined, (key) => feed.nameOf(key)),
      10,
    );
    expect(top.map((t) => [t.tracker, t.route, t.policy, t.limited])).toEqual([
      ['ip:1', 'GET /a', 'api.v1', 1],
    ]);
    expect(feed.rates.minute(2)['GET /a'].slice(0, 3)).toEqual([1, 1, 1]);
    expect(feed.directory.known().map((r) => r.route)).toEqual(['GET /a']);
  });

  it('names a key of policies that changed since the route was noted, when it counts it', () => {
    const feed = new DecisionFeed(() => 120_000);
    const first = decision([true, true]);
    feed.decided('GET /a', limits('ip:1'), first, first);
    // A per-request threshold: another policy id, so another key shape than the one noted.
    const OTHER = resolvePolicy({ name: 'api.v1', period: '1m', threshold: 9 }, 'test');
    const head = keys.routeHead('GET /a') + encodeKeyPart('ip:%2');
    const changed = { keys: [head + RouteKeys.tail(OTHER, 0)], policies: [OTHER], costs: [1] };
    const rejected = decision([false]);
    feed.decided('GET /a', changed, rejected, rejected);
    feed.decided('GET /a', limits('ip:3'), rejected, rejected);
    const top = LimitedTrackers.top(
      feed.limited.recent(120_000, undefined, (key) => feed.nameOf(key)),
      10,
    );
    expect(top.map((t) => [t.tracker, t.policy])).toEqual(
      expect.arrayContaining([
        ['ip:%2', 'api.v1'],
        ['ip:3', 'api.v1'],
      ]),
    );
    expect(top).toHaveLength(2);
  });
});

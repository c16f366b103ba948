/**
 * What the console keeps per instance: the tracker read back from a key of every route shape (and
 * a key rebuilt from it), decisions per route and outcome in 10 s buckets, and the feed that
 * tells a rejection from a shadow policy's and a degraded answer, and reports as instances store
 * them.
 */
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  type ActivityReport,
  MemoryActivityExchange,
} from '../../lib/activity/activity-exchange.js';
import { DecisionFeed } from '../../lib/activity/decision-feed.js';
import { LimitedTrackers } from '../../lib/activity/limited-trackers.js';
import { Outcome, OutcomeRates } from '../../lib/activity/outcome-rates.js';
import { packReport, unpackReport } from '../../lib/activity/packed-report.js';
import { RouteDirectory } from '../../lib/activity/route-directory.js';
import {
  decodeKeyPart,
  encodeKeyPart,
  policyTrackerPart,
  RouteKeys,
} from '../../lib/keys/route-keys.js';
import { ActivitySharing } from '../../lib/console/activity-sharing.js';
import { resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import { type RateLimitDecision } from '../../lib/store-contract/store.interface.js';
import { reportOf } from '../support/activity-reports.js';

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

describe('a report as instances store it', () => {
  const entry = fc.record({
    key: fc.oneof(
      fc
        .tuple(fc.constantFrom('GET /a', 'POST /b/:id'), fc.constantFrom('api', 'burst'), trackers)
        .map(([route, policy, tracker]) => LimitedTrackers.subject(route, policy) + tracker),
      fc.string({ maxLength: 20 }),
    ),
    count: fc.nat(),
    error: fc.nat(),
    last: fc.integer({ min: 6_000_000, max: 6_059_999 }),
  });

  it('reads back as it was, with or without routes', () => {
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 40 }), fc.nat(), fc.boolean(), (entries, u, r) => {
        const report: ActivityReport = {
          instance: 'i-1',
          minute: 100,
          top: { entries, unseenAtMost: u },
          counts: { 'GET /a': [1, 2, 3] },
          ...(r ? { routes: [{ route: 'GET /a', keys: [] }] } : {}),
        };
        expect(unpackReport(packReport(report))).toEqual(report);
      }),
    );
  });

  it('writes each route and policy once, not in every entry', () => {
    const head = LimitedTrackers.subject('GET /api/search/:query', 'search-per-user');
    const entries = Array.from({ length: 128 }, (_, i) => ({
      key: `${head}user:${i}`,
      count: 1000 - i,
      error: 0,
      last: 6_000_000 + i,
    }));
    const report = { instance: 'i', minute: 100, top: { entries, unseenAtMost: 0 }, counts: {} };
    const packed = packReport(report);
    expect(packed.split('search-per-user').length - 1).toBe(1);
    expect(packed.length).toBeLessThan(JSON.stringify(report).length / 2);
  });

  it('is not read from a value in another shape', () => {
    for (const value of [
      'not json',
      '{"version":0}',
      'null',
      '{"i":"x","m":1,"u":0,"s":[],"e":[[0]],"c":{}}',
    ]) {
      expect(unpackReport(value)).toBeUndefined();
    }
  });
});

describe('the activity a console reads', () => {
  /** The in-process exchange, counting its reads, as if it were shared. */
  class CountingExchange extends MemoryActivityExchange {
    override readonly shared = true;
    reads = 0;
    failWith: Error | undefined;
    override read(minutes: readonly number[]) {
      this.reads++;
      return this.failWith === undefined ? super.read(minutes) : Promise.reject(this.failWith);
    }
  }

  it('reads the store once for the calls of one poll, and again for the next poll', async () => {
    const exchange = new CountingExchange();
    const sharing = new ActivitySharing(new DecisionFeed(), exchange);
    const now = 6_000_000;
    await Promise.all([sharing.top(2, 20, now), sharing.rates(now), sharing.routes(now)]);
    expect(exchange.reads).toBe(1);
    await sharing.top(16, 20, now + 2000);
    expect(exchange.reads).toBe(2);
  });

  it("shows another instance's report, and this one's alone, saying why, while the store fails", async () => {
    const exchange = new CountingExchange();
    const sharing = new ActivitySharing(new DecisionFeed(), exchange);
    const now = 6_000_000;
    const minute = now / 60_000;
    await exchange.share(reportOf('other', minute, 7));
    expect((await sharing.top(2, 20, now)).map((t) => t.limited)).toEqual([7]);
    expect(sharing.reach()).toEqual({ instances: 'all' });
    exchange.failWith = new Error('no connection');
    expect(await sharing.top(2, 20, now + 2000)).toEqual([]);
    expect(sharing.reach()).toEqual({ instances: 'this one', reason: 'no connection' });
  });

  it('says it shows this instance alone where the store is in this process', () => {
    const sharing = new ActivitySharing(new DecisionFeed(), new MemoryActivityExchange());
    expect(sharing.reach()).toEqual({
      instances: 'this one',
      reason: 'the store is in this process',
    });
  });
});

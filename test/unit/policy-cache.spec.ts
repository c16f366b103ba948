/** RateLimitService's policy cache: by identity, and by shape for policies written inline. */
import { describe, expect, it } from '@jest/globals';
import { RateLimitConfigError } from '../../lib/index.js';
import { PolicyCache } from '../../lib/service/policy-cache.js';

describe('PolicyCache', () => {
  const where = 'RateLimitService.consume';

  it('compiles a new literal with the same values once, as it does the same object', () => {
    const cache = new PolicyCache();
    const first = cache.get({ period: 60, threshold: 5 }, where);
    expect(cache.get({ period: 60, threshold: 5 }, where)).toBe(first);
    // The same fields in another order are the same policy.
    expect(cache.get({ threshold: 5, period: 60 }, where)).toBe(first);
    expect(cache.get({ period: 60, threshold: 6 }, where)).not.toBe(first);
    expect(cache.get({ period: 60, threshold: 5, name: undefined }, where)).not.toBe(first);
    expect(cache.get({ period: 60 }, where)).not.toBe(first);
    const list = cache.get([{ period: 1 }, { period: 60, threshold: 5, name: 'b' }], where);
    expect(cache.get([{ period: 1 }, { period: 60, threshold: 5, name: 'b' }], where)).toBe(list);
    expect(first.policies[0]).toMatchObject({ periodMs: 60_000, threshold: 5 });
  });

  it('finds literals of many call sites, the latest compared in place and the rest by shape', () => {
    const cache = new PolicyCache();
    const compiled = Array.from({ length: 20 }, (_, i) => cache.get({ threshold: i + 1 }, where));
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 20; i++) {
        expect(cache.get({ threshold: i + 1 }, where)).toBe(compiled[i]);
        expect(compiled[i].policies[0].threshold).toBe(i + 1);
      }
    }
    // A literal changed after its first use is remembered as it was, not as it is now.
    const changing = { period: 30, threshold: 2 };
    const before = cache.get(changing, where);
    changing.threshold = 3;
    expect(cache.get({ period: 30, threshold: 2 }, where)).toBe(before);
    expect(cache.get({ period: 30, threshold: 3 }, where).policies[0].threshold).toBe(3);
  });

  it('never lets a cached shape stand in for an invalid policy', () => {
    const cache = new PolicyCache();
    cache.get({ period: 60, threshold: 5 }, where);
    // The same digits as a string: a duration needs a unit.
    expect(() => cache.get({ period: '60', threshold: 5 }, where)).toThrow(RateLimitConfigError);
    expect(() =>
      cache.get({ period: 60, threshold: 5, count: 'failures' } as never, where),
    ).toThrow(/unknown field "count" \(count applies only to @RateLimit routes\)/);
    const tracker = () => 'x';
    expect(() => cache.get({ period: 60, threshold: 5, tracker } as never, where)).toThrow(
      /unknown field "tracker" \(tracker applies only to @RateLimit routes\)/,
    );
    expect(() => cache.get({ period: 60, threshold: () => 5 } as never, where)).toThrow(
      /plain values/,
    );
    // And an invalid one is never cached: it throws every time.
    expect(() => cache.get({ period: 60, threshold: 0 }, where)).toThrow(/threshold/);
    expect(() => cache.get({ period: 60, threshold: 0 }, where)).toThrow(/threshold/);
  });
});

/** RateLimitService's policy cache: by identity, and by shape for policies written inline. */
import { describe, expect, it } from '@jest/globals';
import { RateLimitConfigError } from '../../lib/index.js';
import { PolicyCache } from '../../lib/rate-limit.policy-cache.js';

describe('PolicyCache', () => {
  const where = 'RateLimitService.consume';

  it('compiles a new literal with the same values once, as it does the same object', () => {
    const cache = new PolicyCache();
    const first = cache.get({ period: 60, threshold: 5 }, where);
    expect(cache.get({ period: 60, threshold: 5 }, where)).toBe(first);
    expect(cache.get({ threshold: 5, period: 60 }, where)).not.toBe(first);
    expect(cache.get({ period: 60, threshold: 6 }, where)).not.toBe(first);
    const list = cache.get([{ period: 1 }, { period: 60, threshold: 5, name: 'b' }], where);
    expect(cache.get([{ period: 1 }, { period: 60, threshold: 5, name: 'b' }], where)).toBe(list);
    expect(first.policies[0]).toMatchObject({ periodMs: 60_000, threshold: 5 });
  });

  it('never lets a cached shape stand in for an invalid policy', () => {
    const cache = new PolicyCache();
    cache.get({ period: 60, threshold: 5 }, where);
    // The same digits as a string: a duration needs a unit.
    expect(() => cache.get({ period: '60', threshold: 5 }, where)).toThrow(RateLimitConfigError);
    expect(() =>
      cache.get({ period: 60, threshold: 5, count: 'failures' } as never, where),
    ).toThrow(/count must be omitted/);
    const tracker = () => 'x';
    expect(() => cache.get({ period: 60, threshold: 5, tracker } as never, where)).toThrow(
      /tracker must be omitted/,
    );
    expect(() => cache.get({ period: 60, threshold: () => 5 } as never, where)).toThrow(
      /plain values/,
    );
    // And an invalid one is never cached: it throws every time.
    expect(() => cache.get({ period: 60, threshold: 0 }, where)).toThrow(/threshold/);
    expect(() => cache.get({ period: 60, threshold: 0 }, where)).toThrow(/threshold/);
  });
});

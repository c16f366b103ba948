/** What `@RateLimit` refuses when a class is defined: names, algorithms, burst, policy count. */
import { describe, expect, it } from '@jest/globals';
import { type Algorithm } from '../../lib/algorithms/algorithm.js';
import { RateLimit } from '../../lib/index.js';
import { decorationError, onMethod } from '../support/decoration.js';

describe('@RateLimit validation of several policies, algorithm and burst, when the class is defined', () => {
  it('rejects duplicate names among the policies of one route', () => {
    const error = decorationError(onMethod([{ name: 'a' }, { name: 'a', threshold: 5 }]));
    expect(error.message).toBe(
      '@RateLimit on X.m: name must be unique among the policies of a route, got "a"',
    );
  });

  // An explicit name does not depend on the request, so it is checked even on a dynamic policy.
  it('rejects duplicate explicit names when one of the policies has a dynamic threshold', () => {
    const error = decorationError(
      onMethod([
        { name: 'a', period: 60, threshold: () => 3 },
        { name: 'a', period: 60, threshold: 3 },
      ]),
    );
    expect(error.message).toBe(
      '@RateLimit on X.m: name must be unique among the policies of a route, got "a"',
    );
  });

  it('rejects one name given to policies of different algorithms: the headers could not tell them apart', () => {
    const error = decorationError(
      onMethod([{ name: 'a' }, { name: 'a', algorithm: 'fixed-window' }]),
    );
    expect(error.message).toBe(
      '@RateLimit on X.m: name must be unique among the policies of a route, got "a"',
    );
  });

  it('rejects stacked decorators that produce the same (default) name', () => {
    const error = decorationError(() => {
      class X {
        @RateLimit({ period: 60, threshold: 3 })
        @RateLimit({ period: '1m', threshold: 3 })
        m() {}
      }
      return X;
    });
    expect(error.message).toBe(
      '@RateLimit on X.m: name must be unique among the policies of a route, got "3-per-1m"',
    );
  });

  it('accepts distinct names, in an array and stacked', () => {
    expect(onMethod([{ name: 'a' }, { name: 'b', threshold: 5 }])).not.toThrow();
    expect(() => {
      class X {
        @RateLimit({ period: 60, threshold: 3 })
        @RateLimit({ period: 60, threshold: 4 })
        m() {}
      }
      return X;
    }).not.toThrow();
  });

  it('rejects burst on a sliding window, naming burst, with fixed and with dynamic values', () => {
    const fixed = decorationError(onMethod({ period: 60, threshold: 3, burst: 5 }));
    expect(fixed.message).toMatch(/^@RateLimit on X\.m: burst must be omitted for sliding-window/);
    expect(fixed.message).toMatch(/got 5$/);

    const dynamic = decorationError(
      onMethod({ algorithm: 'sliding-window-counter', threshold: () => 3, burst: 5 }),
    );
    expect(dynamic.message).toMatch(/^@RateLimit on X\.m: burst must be omitted/);

    expect(onMethod({ algorithm: 'token-bucket', threshold: 3, burst: 5 })).not.toThrow();
    expect(onMethod({ algorithm: 'leaky-bucket', threshold: () => 3, burst: 5 })).not.toThrow();
  });

  it('rejects an unknown algorithm, naming the allowed ones, with fixed and with dynamic values', () => {
    const expected =
      '@RateLimit on X.m: algorithm must be one of sliding-window, sliding-window-counter, ' +
      'fixed-window, token-bucket, leaky-bucket, concurrency, got "token_bucket"';
    const algorithm = 'token_bucket' as Algorithm;
    expect(decorationError(onMethod({ algorithm })).message).toBe(expected);
    expect(decorationError(onMethod({ algorithm, threshold: () => 3 })).message).toBe(expected);
  });

  it('rejects more than 8 policies on a route, in one array or stacked, and accepts 8', () => {
    const policies = (n: number, from = 1) =>
      Array.from({ length: n }, (_, i) => ({ period: 60, threshold: from + i }));
    const expected = '@RateLimit on X.m: policies must be at most 8 per route, got "9 of them"';

    expect(decorationError(onMethod(policies(9))).message).toBe(expected);
    const stacked = decorationError(() => {
      class X {
        @RateLimit(policies(4, 100))
        @RateLimit(policies(5))
        m() {}
      }
      return X;
    });
    expect(stacked.message).toBe(expected);
    expect(onMethod(policies(8))).not.toThrow();
  });
});

/** What flow control refuses, and where it says so: decorators at class definition, the service per call. */
import { describe, expect, it } from '@jest/globals';
import { Test } from '@nestjs/testing';
import { LeaseKeeper } from '../../lib/flow/lease-keeper.js';
import { RateLimit, RateLimitModule, type RoutePolicy, RateLimitService } from '../../lib/index.js';

function defining(policies: RoutePolicy | RoutePolicy[]) {
  return () => {
    class Reports {
      @RateLimit(policies)
      export() {}
    }
    return Reports;
  };
}

describe('flow control on routes, checked when the class is defined', () => {
  it('rejects a bad maxWait, naming the field and the route', () => {
    expect(defining({ maxWait: '2 seconds' })).toThrow(
      /^@RateLimit on Reports\.export: maxWait must be a number of seconds or a string like/,
    );
    expect(defining({ maxWait: -1 })).toThrow(/maxWait must be at least 1ms, got -1/);
    expect(defining({ maxWait: '2s', algorithm: 'leaky-bucket', burst: 1 })).not.toThrow();
    expect(defining({ maxWait: 0 })).not.toThrow();
  });

  it('rejects maxWait on a shadow policy, which never holds a request', () => {
    expect(defining({ maxWait: '1s', shadow: true })).toThrow(
      '@RateLimit on Reports.export: maxWait must be omitted on a shadow policy, which never holds a request, got "1s"',
    );
  });

  it('rejects counting outcomes on a concurrency policy, whose lease is freed whatever the outcome', () => {
    expect(defining({ algorithm: 'concurrency', threshold: 2, count: 'failures' })).toThrow(
      /^@RateLimit on Reports\.export: count must be omitted for concurrency/,
    );
    expect(defining({ algorithm: 'concurrency', threshold: 2, period: '30s' })).not.toThrow();
    expect(defining({ algorithm: 'concurrency', burst: 2 })).toThrow(/burst must be omitted/);
  });
});

describe('flow control through RateLimitService', () => {
  async function service() {
    const ref = await Test.createTestingModule({ imports: [RateLimitModule.forRoot()] }).compile();
    return { service: ref.get(RateLimitService), close: () => ref.close() };
  }

  it('keeps concurrency to acquire and run, which release the lease', async () => {
    const { service: limiter, close } = await service();
    const exports = { algorithm: 'concurrency', threshold: 1 } as const;
    expect(() => limiter.consume('k', exports)).toThrow(
      'RateLimitService.consume: algorithm must be used through acquire() or run(), which release the lease, got "concurrency"',
    );
    expect(await limiter.peek('k', exports)).toMatchObject({ allowed: true, remaining: 0 });
    await expect(limiter.run('k', exports, () => 'ran')).resolves.toBe('ran');
    await close();
  });

  it('holds no lease taken after shutdown, and frees it at once', async () => {
    const ref = await Test.createTestingModule({ imports: [RateLimitModule.forRoot()] }).compile();
    const app = ref.createNestApplication({ logger: false });
    await app.init();
    const [limiter, keeper] = [app.get(RateLimitService), app.get(LeaseKeeper)];
    const one = { algorithm: 'concurrency', threshold: 1 } as const;
    const before = await limiter.acquire('k', one);
    expect(keeper.size).toBe(1);
    await app.close();
    expect(keeper.size).toBe(0);
    await before.release();
    // A call still waiting at shutdown gets its permit, but nothing renews it meanwhile.
    await limiter.acquire('k', one);
    expect(keeper.size).toBe(0);
    await expect(limiter.acquire('k', one, { maxWait: 0 })).resolves.toMatchObject({
      allowed: true,
    });
  });

  it('rejects route-only fields and a bad maxWait or fn, naming them', async () => {
    const { service: limiter, close } = await service();
    expect(() => limiter.consume('k', { maxWait: '1s' } as never)).toThrow(
      /RateLimitService.consume: unknown field "maxWait" \(maxWait on a policy applies only to @RateLimit routes; pass it to acquire\(\) or run\(\) as an option\)/,
    );
    // The caller's key already says who shares the budget.
    expect(() => limiter.consume('k', { scope: 'app' } as never)).toThrow(
      'RateLimitService.consume: unknown field "scope" (scope applies only to @RateLimit routes)',
    );
    await expect(limiter.acquire('k', { threshold: 1 }, { maxWait: 'soon' })).rejects.toThrow(
      /RateLimitService.acquire: maxWait must be/,
    );
    await expect(limiter.run('k', { threshold: 1 }, 'not a function' as never)).rejects.toThrow(
      /RateLimitService.run: fn must be a function/,
    );
    const aborted = AbortSignal.abort(new Error('gone'));
    await expect(limiter.acquire('k', { threshold: 1 }, { signal: aborted })).rejects.toThrow(
      'gone',
    );
    await close();
  });
});

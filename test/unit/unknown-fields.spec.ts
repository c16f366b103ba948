/** A misspelled field is an error naming the place and the nearest known field, never a default. */
import { describe, expect, it } from '@jest/globals';
import { Controller, Get } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  RateLimit,
  RateLimitConfigError,
  RateLimitModule,
  type RateLimitModuleOptions,
  type RateLimitPolicy,
  RateLimitService,
  type RoutePolicy,
} from '../../lib/index.js';
import { editDistance, type FieldList, nearestField } from '../../lib/policy/known-fields.js';
import { POLICY_FIELDS } from '../../lib/policy/rate-limit.policy.js';
import { ROUTE_POLICY_FIELDS } from '../../lib/templates/route-policy.js';

describe('the nearest known field', () => {
  it('counts a swapped pair as one edit, and ignores case', () => {
    expect(editDistance('maxwiat', 'maxwait')).toBe(1);
    expect(editDistance('cots', 'cost')).toBe(1);
    expect(editDistance('blockduraton', 'blockduration')).toBe(1);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('kitten', 'sitting')).toBe(3);
  });

  it.each([
    ['treshold', 'threshold'],
    ['blockDuraton', 'blockDuration'],
    ['Threshold', 'threshold'],
    ['block_duration', 'blockDuration'],
    ['cots', 'cost'],
    ['onStoreErorr', 'onStoreError'],
  ])('suggests %p for %p', (typed, meant) => {
    expect(nearestField(typed, Object.keys(ROUTE_POLICY_FIELDS))).toBe(meant);
  });

  it('suggests nothing for a field close to none', () => {
    expect(nearestField('limit', Object.keys(POLICY_FIELDS))).toBeUndefined();
    expect(nearestField('x', Object.keys(POLICY_FIELDS))).toBeUndefined();
  });

  it('keeps every field of the interfaces in the lists', () => {
    expect(Object.keys(ROUTE_POLICY_FIELDS)).toEqual(
      expect.arrayContaining(['onStoreError', 'scope', 'tracker', 'maxWait', 'blockDuration']),
    );
    // @ts-expect-error a list that misses a field of the interface does not compile
    const missing = { period: true } satisfies FieldList<RateLimitPolicy>;
    // @ts-expect-error nor does one that names a field the interface lacks
    const extra = { ...POLICY_FIELDS, treshold: true } satisfies FieldList<RateLimitPolicy>;
    expect([missing, extra]).toHaveLength(2);
  });
});

describe('@RateLimit rejects a field it does not know when the class is defined', () => {
  it('on a method, with the policy held in a variable (no excess-property check)', () => {
    const policy = { period: '1m', treshold: 60 };
    expect(() => {
      class LoginController {
        @RateLimit(policy)
        login() {}
      }
      return LoginController;
    }).toThrow(
      new RateLimitConfigError(
        '@RateLimit on LoginController.login: unknown field "treshold" (did you mean "threshold"?)',
      ),
    );
  });

  it('on a class', () => {
    const policy = { period: '15m', threshold: 5, blockDuraton: '15m' };
    expect(() => {
      @RateLimit(policy)
      @Controller('accounts')
      class AccountsController {}
      return AccountsController;
    }).toThrow(
      '@RateLimit on AccountsController: unknown field "blockDuraton" (did you mean "blockDuration"?)',
    );
  });

  it('in any policy of a list, and lists the known fields when none is near', () => {
    const policies = [
      { period: '1s', threshold: 5 },
      { period: '1h', quota: 1000 },
    ];
    expect(() => {
      class SearchController {
        @RateLimit(policies)
        search() {}
      }
      return SearchController;
    }).toThrow(
      /^@RateLimit on SearchController\.search: unknown field "quota" \(known fields: period, threshold, .*, settle\)$/,
    );
  });

  it('takes every field a route policy has, scope and onStoreError included', () => {
    // A shared scope needs every policy of the route to count the same tracker.
    const tracker = () => 'user';
    const policy: Required<
      Omit<RoutePolicy, 'burst' | 'count' | 'calendar' | 'timeZone' | 'anchor'>
    > = {
      period: '1m',
      threshold: 60,
      algorithm: 'sliding-window',
      cost: 1,
      name: 'api',
      blockDuration: '1m',
      onStoreError: 'deny',
      settle: () => 1,
      tracker,
      shadow: false,
      maxWait: '1s',
      scope: 'app',
    };
    expect(() => {
      class ApiController {
        @RateLimit([policy, { algorithm: 'token-bucket', burst: 2, count: 'failures', tracker }])
        call() {}
      }
      return ApiController;
    }).not.toThrow();
  });

  it('takes the calendar fields, which stand in for period', () => {
    const policy: Required<Pick<RoutePolicy, 'calendar' | 'timeZone' | 'anchor'>> = {
      calendar: 'month',
      timeZone: 'Europe/Berlin',
      anchor: () => '2026-01-31',
    };
    expect(() => {
      class BillingController {
        @RateLimit({ ...policy, algorithm: 'fixed-window', threshold: 100 })
        call() {}
      }
      return BillingController;
    }).not.toThrow();
  });
});

describe('RateLimitService rejects a field it does not know at the call', () => {
  async function service() {
    const ref = await Test.createTestingModule({ imports: [RateLimitModule.forRoot()] }).compile();
    return { limiter: ref.get(RateLimitService), close: () => ref.close() };
  }
  const typo = { period: '1m', treshold: 60 } as RateLimitPolicy;
  const suggestion = 'unknown field "treshold" (did you mean "threshold"?)';

  it('in the policy of every method, and every time: such a policy is never cached', async () => {
    const { limiter, close } = await service();
    for (let i = 0; i < 2; i++) {
      expect(() => limiter.consume('k', typo)).toThrow(`RateLimitService.consume: ${suggestion}`);
      expect(() => limiter.peek('k', [{ threshold: 1 }, typo])).toThrow(
        `RateLimitService.peek: ${suggestion}`,
      );
      expect(() => limiter.refund('k', typo)).toThrow(`RateLimitService.refund: ${suggestion}`);
      expect(() => limiter.reset('k', typo)).toThrow(`RateLimitService.reset: ${suggestion}`);
      expect(() => limiter.block('k', typo, '1m')).toThrow(`RateLimitService.block: ${suggestion}`);
      await expect(limiter.acquire('k', typo)).rejects.toThrow(
        `RateLimitService.acquire: ${suggestion}`,
      );
      await expect(limiter.run('k', typo, () => 'ran')).rejects.toThrow(
        `RateLimitService.run: ${suggestion}`,
      );
    }
    await close();
  });

  it('in the options of every method', async () => {
    const { limiter, close } = await service();
    const cots = { cots: 2 } as never;
    const hint = 'unknown field "cots" (did you mean "cost"?)';
    expect(() => limiter.consume('k', {}, cots)).toThrow(`RateLimitService.consume: ${hint}`);
    expect(() => limiter.peek('k', {}, cots)).toThrow(`RateLimitService.peek: ${hint}`);
    expect(() => limiter.refund('k', {}, cots)).toThrow(`RateLimitService.refund: ${hint}`);
    const maxWiat = { maxWiat: 1 } as never;
    const wait = 'unknown field "maxWiat" (did you mean "maxWait"?)';
    await expect(limiter.acquire('k', {}, maxWiat)).rejects.toThrow(
      `RateLimitService.acquire: ${wait}`,
    );
    await expect(limiter.run('k', {}, () => 'ran', maxWiat)).rejects.toThrow(
      `RateLimitService.run: ${wait}`,
    );
    expect(() => limiter.consume('k', {}, { maxWait: 1 } as never)).toThrow(
      'RateLimitService.consume: unknown field "maxWait" (maxWait applies only to acquire(), run() and reserve())',
    );
    expect(() => limiter.consume('k', {}, 2 as never)).toThrow(
      'RateLimitService.consume: options must be an object like { cost: 2 }, got 2',
    );
    await close();
  });

  it('names a route-only field as such, and takes onStoreError', async () => {
    const { limiter, close } = await service();
    expect(() => limiter.consume('k', { threshold: 1, scope: 'app' } as never)).toThrow(
      'RateLimitService.consume: unknown field "scope" (scope applies only to @RateLimit routes)',
    );
    await expect(
      limiter.consume('k', { threshold: 1, onStoreError: 'deny' }, { cost: 1 }),
    ).resolves.toMatchObject({ allowed: true });
    await expect(limiter.run('other', { threshold: 1 }, () => 'ran', { maxWait: 0 })).resolves.toBe(
      'ran',
    );
    await close();
  });
});

describe('module options: an unknown field fails the bootstrap', () => {
  it.each<[string, string]>([
    ['timout', 'timeout'],
    ['reddis', 'redis'],
    ['onStoreErorr', 'onStoreError'],
  ])('forRoot({ %s })', async (field, meant) => {
    const options = { [field]: 'x' } as RateLimitModuleOptions;
    const compiling = Test.createTestingModule({
      imports: [RateLimitModule.forRoot(options)],
    }).compile();
    await expect(compiling).rejects.toThrow(
      new RateLimitConfigError(
        `RateLimitModule options: unknown field "${field}" (did you mean "${meant}"?)`,
      ),
    );
  });

  it('globalGuard in what an async factory returns: it goes beside useFactory', async () => {
    const module = RateLimitModule.forRootAsync({
      useFactory: () => ({ globalGuard: false }) as RateLimitModuleOptions,
    });
    await expect(Test.createTestingModule({ imports: [module] }).compile()).rejects.toThrow(
      'RateLimitModule options: unknown field "globalGuard" (globalGuard goes beside useFactory in forRootAsync(), not in what it returns)',
    );
  });

  it('forRootAsync itself: a misspelled field, or a module option given beside the factory', () => {
    expect(() => RateLimitModule.forRootAsync({ useFactroy: () => ({}) } as never)).toThrow(
      'RateLimitModule.forRootAsync: unknown field "useFactroy" (did you mean "useFactory"?)',
    );
    expect(() =>
      RateLimitModule.forRootAsync({ useFactory: () => ({}), redis: 'redis://x' } as never),
    ).toThrow(
      'RateLimitModule.forRootAsync: unknown field "redis" (redis belongs in the options useFactory (or createRateLimitOptions) returns)',
    );
  });

  it('boots with every known field spelled right', async () => {
    @Controller('ok')
    class OkController {
      @Get()
      get() {
        return 'ok';
      }
    }
    const ref = await Test.createTestingModule({
      imports: [
        RateLimitModule.forRoot({ timeout: 50, onStoreError: 'allow', globalGuard: false }),
      ],
      controllers: [OkController],
    }).compile();
    await ref.close();
  });
});

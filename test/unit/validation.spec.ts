import { describe, expect, it } from '@jest/globals';
import { Controller, Get } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import {
  RateLimit,
  RateLimitConfigError,
  RateLimitModule,
  RateLimitService,
  type RateLimitModuleOptions,
} from '../../lib/index.js';
import { resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import { formatDuration, parseDuration } from '../../lib/policy/validation.js';

describe('durations', () => {
  it.each([
    [30, 30_000],
    [0.5, 500],
    [0.1, 100],
    ['500ms', 500],
    ['30s', 30_000],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    ['1.5s', 1500],
    [' 2m ', 120_000],
  ])('parses %p as %p ms', (value, ms) => {
    expect(parseDuration(value, 'period', 'here')).toBe(ms);
  });

  it.each([
    0,
    -1,
    NaN,
    Infinity,
    0.0001,
    '10 parsecs',
    '',
    '5',
    's',
    '-1s',
    '1.5ms',
    null,
    {},
    '11y',
  ])('rejects %p with the field, the value and the place', (value) => {
    expect(() => parseDuration(value, 'period', '@RateLimit on X.y')).toThrow(RateLimitConfigError);
    expect(() => parseDuration(value, 'period', '@RateLimit on X.y')).toThrow(
      /^@RateLimit on X\.y: period must be/,
    );
  });

  it('names windows with the largest unit that divides them', () => {
    expect(
      [500, 1000, 30_000, 90_000, 60_000, 3_600_000, 86_400_000, 1500].map(formatDuration),
    ).toEqual(['500ms', '1s', '30s', '90s', '1m', '1h', '1d', '1500ms']);
  });
});

describe('policies', () => {
  it("uses the seed's defaults for a bare @RateLimit(): period 60, threshold 3", () => {
    expect(resolvePolicy(undefined, 'x')).toEqual({
      name: '3-per-1m',
      algorithm: 'sliding-window',
      code: 'sw',
      id: 'sw:3-per-1m',
      burst: 3,
      periodMs: 60_000,
      periodUs: 60_000_000,
      threshold: 3,
      blockUs: 0,
    });
  });

  it.each([
    [-1, /^w: blockDuration must be at least 1ms, got -1$/],
    ['soon', /^w: blockDuration must be a number of seconds or a string like/],
    [null, /^w: blockDuration must be a number of seconds or a duration string, got null$/],
  ])('rejects blockDuration %p, naming the field', (blockDuration, message) => {
    expect(() => resolvePolicy({ blockDuration: blockDuration as number }, 'w')).toThrow(message);
  });

  it.each([
    [{ count: 'errors' }, /count must be one of all, failures, successes, got "errors"/],
    [{ tracker: 'username' }, /tracker must be a function of the ExecutionContext, got "username"/],
    [{ shadow: 'yes' }, /shadow must be true or false, got "yes"/],
  ])('rejects the route field in %j when applied, naming the route', (fields, message) => {
    class AccountsController {
      login() {}
    }
    const descriptor = Object.getOwnPropertyDescriptor(AccountsController.prototype, 'login')!;
    const apply = () =>
      RateLimit({ threshold: 3, ...(fields as object) })(
        AccountsController.prototype,
        'login',
        descriptor,
      );
    expect(apply).toThrow(
      new RegExp(`^@RateLimit on AccountsController.login: ${message.source}$`),
    );
  });

  it('checks blockDuration when the decorator is applied, even on a dynamic policy', () => {
    class LoginController {}
    expect(() => RateLimit({ threshold: () => 3, blockDuration: 0 })(LoginController)).toThrow(
      /^@RateLimit on LoginController: blockDuration must be at least 1ms, got 0$/,
    );
    expect(resolvePolicy({ blockDuration: '15m' }, 'w').blockUs).toBe(900_000_000);
  });

  it.each([0, -2, 2.5, NaN, '3', null, 1e9 + 1])('rejects threshold %p', (threshold) => {
    expect(() => resolvePolicy({ threshold: threshold as number }, 'w')).toThrow(
      /^w: threshold must be an integer from 1 to 1000000000, got /,
    );
  });

  it('names the bound of a count past it, as an override does: threshold, burst and cost', () => {
    expect(() => resolvePolicy({ threshold: 1e12 }, 'w')).toThrow(
      new RateLimitConfigError(
        'w: threshold must be an integer from 1 to 1000000000, got 1000000000000',
      ),
    );
    expect(() => resolvePolicy({ algorithm: 'token-bucket', burst: 1e12 }, 'w')).toThrow(
      new RateLimitConfigError(
        'w: burst must be an integer from 1 to 1000000000, got 1000000000000',
      ),
    );
    expect(() => {
      class ReportsController {
        @RateLimit({ threshold: 1e12 })
        export() {}
      }
      return ReportsController;
    }).toThrow(
      '@RateLimit on ReportsController.export: threshold must be an integer from 1 to 1000000000, got 1000000000000',
    );
    expect(() => {
      class ReportsController {
        @RateLimit({ threshold: 10, cost: 2e9 })
        export() {}
      }
      return ReportsController;
    }).toThrow(
      '@RateLimit on ReportsController.export: cost must be an integer from 1 to 1000000000, got 2000000000',
    );
    expect(resolvePolicy({ threshold: 1e9 }, 'w').threshold).toBe(1e9);
  });

  it('rejects a policy that is not an object, and names with unsafe characters', () => {
    expect(() => resolvePolicy(5 as never, 'w')).toThrow(/^w: policy must be an object/);
    expect(() => resolvePolicy({ name: 'a"b' }, 'w')).toThrow(/^w: name must be/);
  });

  it('throws when the decorated class is defined, naming Controller.method', () => {
    expect(() => {
      @Controller('bad')
      class BadController {
        @RateLimit({ period: 30, threshold: 0 })
        @Get()
        list() {}
      }
      return BadController;
    }).toThrow(
      '@RateLimit on BadController.list: threshold must be an integer from 1 to 1000000000, got 0',
    );

    expect(() => {
      @RateLimit({ period: '10 parsecs' })
      @Controller('bad')
      class BadClassController {}
      return BadClassController;
    }).toThrow(
      /^@RateLimit on BadClassController: period must be a number of seconds or a string like/,
    );
  });
});

describe('module options fail at bootstrap, not at the first request', () => {
  async function bootstrap(options: RateLimitModuleOptions) {
    const ref = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot(options)],
    }).compile();
    await ref.close();
  }

  it.each<[RateLimitModuleOptions, RegExp]>([
    [{ headers: 'all' as never }, /headers must be one of ietf, legacy, both, none, got "all"/],
    [{ keyPrefix: 'a{b}' }, /keyPrefix must be a string without braces or spaces, got "a\{b\}"/],
    [{ ipv6Subnet: 200 }, /ipv6Subnet must be an integer from 1 to 128, got 200/],
    [{ getTracker: 'ip' as never }, /getTracker must be a function/],
    [{ timeout: 0 }, /timeout must be a whole number of ms from 1 to 60000, got 0/],
    [{ functionTimeout: 0 }, /functionTimeout must be a whole number of ms from 1 to 60000, got 0/],
    [
      { functionTimeout: 1.5 },
      /functionTimeout must be a whole number of ms from 1 to 60000, got 1.5/,
    ],
    [
      { functionTimeout: '1s' as never },
      /functionTimeout must be a whole number of ms from 1 to 60000, got "1s"/,
    ],
    [
      { functionTimeout: 60_001 },
      /functionTimeout must be a whole number of ms from 1 to 60000, got 60001/,
    ],
    [
      { redis: 'redis://127.0.0.1:1', store: { consume: async () => ({}) as never } },
      /store must be omitted when redis is given/,
    ],
    [{ store: {} as never }, /store must be an object with a consume\(\) method/],
    [
      { redis: 42 as never },
      /redis must be an ioredis, iovalkey, node-redis or Valkey GLIDE client, ioredis options or a URL, got 42/,
    ],
  ])('%p', async (options, message) => {
    await expect(bootstrap(options)).rejects.toThrow(message);
    await expect(bootstrap(options)).rejects.toThrow(/^RateLimitModule options: /);
  });

  it('rejects forRootAsync without exactly one of useFactory, useClass, useExisting', () => {
    expect(() => RateLimitModule.forRootAsync({})).toThrow(
      /exactly one of useFactory, useClass, useExisting/,
    );
  });

  it('rejects bad options returned by an async factory while bootstrapping', async () => {
    const module = RateLimitModule.forRootAsync({
      useFactory: () => ({ headers: 'nope' as never }),
    });
    await expect(Test.createTestingModule({ imports: [module] }).compile()).rejects.toThrow(
      /headers must be one of/,
    );
  });
});

describe('RateLimitService.consume input', () => {
  it('rejects an empty key and bad values, and answers a cost no policy allows with never', async () => {
    const ref = await Test.createTestingModule({ imports: [RateLimitModule.forRoot()] }).compile();
    const service = ref.get(RateLimitService);
    expect(() => service.consume('', { threshold: 1 })).toThrow(/key must be a non-empty string/);
    expect(() => service.consume('k', { threshold: -1 })).toThrow(
      /RateLimitService.consume: threshold must be/,
    );
    expect(() => service.consume('k', { threshold: 1e12 })).toThrow(
      'RateLimitService.consume: threshold must be an integer from 1 to 1000000000, got 1000000000000',
    );
    expect(() => service.consume('k', { threshold: 10 }, { cost: 1e12 })).toThrow(
      'RateLimitService.consume: cost must be an integer from 1 to 1000000000, got 1000000000000',
    );
    await expect(service.consume('k', { threshold: 2 }, { cost: 3 })).resolves.toMatchObject({
      allowed: false,
      retryAfterMs: Infinity,
    });
    expect(() => service.consume('k', { threshold: 2 }, { cost: 0.5 })).toThrow(/cost must be/);
    await expect(service.consume('k')).resolves.toMatchObject({
      allowed: true,
      limit: 3,
      remaining: 2,
    });
    await ref.close();
  });
});

describe('RateLimitService: a value left undefined takes its default', () => {
  it('threshold 3, period 60 s and cost 1, as on routes', async () => {
    const ref = await Test.createTestingModule({ imports: [RateLimitModule.forRoot()] }).compile();
    const service = ref.get(RateLimitService);
    const policy = { threshold: undefined, period: undefined, cost: undefined };
    const answers = [];
    for (let i = 0; i < 4; i++) {
      answers.push(await service.consume('undefined-values', policy, { cost: undefined }));
    }
    expect(answers.map((d) => [d.allowed, d.remaining])).toEqual([
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
    ]);
    expect(answers[0].policies[0].policy).toMatchObject({ threshold: 3, periodMs: 60_000 });
    await ref.close();
  });
});

describe('a getTracker that returns nothing usable', () => {
  it('fails the request loudly instead of leaving it unlimited', async () => {
    @Controller('t')
    class TrackedController {
      @RateLimit({ threshold: 1 })
      @Get()
      get() {
        return 'ok';
      }
    }
    const ref = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ getTracker: () => '' })],
      controllers: [TrackedController],
    }).compile();
    const app = ref.createNestApplication({ logger: false });
    await app.init();
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push((await request(app.getHttpServer()).get('/t')).status);
    expect(codes).toEqual([500, 500, 500]);
    await app.close();
  });
});

/**
 * @nestjs/throttler's names, written by habit, fail naming what takes their place: `ttl` and
 * `limit` in policies (routes, the service, overrides), and the throttler's module options.
 */
import { describe, expect, it } from '@jest/globals';
import { Test } from '@nestjs/testing';
import {
  RateLimit,
  RateLimitConfigError,
  RateLimitModule,
  type RateLimitModuleOptions,
  RateLimitService,
  type RoutePolicy,
} from '../../lib/index.js';

const TTL_HINT =
  "did you mean \"period\"? ttl is @nestjs/throttler's name; period is in seconds or a string like '1m', not ms";
const LIMIT_HINT = 'did you mean "threshold"? limit is @nestjs/throttler\'s name';
const NO_LIMITS_HERE = 'in @RateLimit on a controller or method, as the module holds no limits';

describe("@RateLimit names period and threshold for @nestjs/throttler's ttl and limit", () => {
  it('on a method, with the policy held in a variable', () => {
    const throttled = { ttl: 60_000, limit: 100 } as RoutePolicy;
    expect(() => {
      class FeedController {
        @RateLimit(throttled)
        list() {}
      }
      return FeedController;
    }).toThrow(
      new RateLimitConfigError(
        `@RateLimit on FeedController.list: unknown field "ttl" (${TTL_HINT})`,
      ),
    );
  });

  it('on a class, in any policy of a list', () => {
    expect(() => {
      @RateLimit([{ period: '1s', threshold: 5 }, { period: '1m', limit: 100 } as RoutePolicy])
      class FeedController {}
      return FeedController;
    }).toThrow(
      new RateLimitConfigError(
        `@RateLimit on FeedController: unknown field "limit" (${LIMIT_HINT})`,
      ),
    );
  });
});

describe("RateLimitService names period and threshold for @nestjs/throttler's ttl and limit", () => {
  async function service() {
    const ref = await Test.createTestingModule({ imports: [RateLimitModule.forRoot()] }).compile();
    return { limiter: ref.get(RateLimitService), close: () => ref.close() };
  }

  it('in the policies of its methods', async () => {
    const { limiter, close } = await service();
    expect(() => limiter.consume('k', { ttl: 60_000, threshold: 5 } as never)).toThrow(
      new RateLimitConfigError(`RateLimitService.consume: unknown field "ttl" (${TTL_HINT})`),
    );
    expect(() => limiter.peek('k', [{ threshold: 1 }, { limit: 5 } as never])).toThrow(
      new RateLimitConfigError(`RateLimitService.peek: unknown field "limit" (${LIMIT_HINT})`),
    );
    await expect(limiter.acquire('k', { ttl: 1000 } as never)).rejects.toThrow(
      `RateLimitService.acquire: unknown field "ttl" (${TTL_HINT})`,
    );
    await close();
  });

  it("in an override's limit, where a ttl is more likely how long the override lasts", async () => {
    const { limiter, close } = await service();
    await limiter.consume('k', { period: '1m', threshold: 5, name: 'api' });
    await expect(limiter.override('api', { limit: 50 } as never)).rejects.toThrow(
      new RateLimitConfigError(`RateLimitService.override: unknown field "limit" (${LIMIT_HINT})`),
    );
    await expect(limiter.override('api', { threshold: 50, ttl: '1h' } as never)).rejects.toThrow(
      'RateLimitService.override: unknown field "ttl" (ttl, how long the override lasts, goes in the options: override(policy, { threshold }, { ttl }); the window is period)',
    );
    await close();
  });
});

describe("module options: @nestjs/throttler's fail the bootstrap, saying what takes their place", () => {
  it.each<[string, string]>([
    ['ttl', `${TTL_HINT}, ${NO_LIMITS_HERE}`],
    ['limit', `${LIMIT_HINT}, ${NO_LIMITS_HERE}`],
    [
      'throttlers',
      "@nestjs/throttler's throttlers become @RateLimit({ period, threshold }) on a controller or method, as the module holds no limits",
    ],
    [
      'storage',
      "storage is @nestjs/throttler's name: give redis (a client, its options or a URL) or store (a custom RateLimitStore)",
    ],
    [
      'ignoreUserAgents',
      "ignoreUserAgents is @nestjs/throttler's: skipIf: (context) => boolean skips what it returns true for",
    ],
    ['setHeaders', "setHeaders is @nestjs/throttler's name: headers: 'none' sends none"],
    ['ipv6SubnetPrefix', `did you mean "ipv6Subnet"? ipv6SubnetPrefix is @nestjs/throttler's name`],
    [
      'generateKey',
      "generateKey is @nestjs/throttler's: a policy's scope shares its limit between routes, keyPrefix namespaces every key",
    ],
  ])('forRoot({ %s })', async (field, hint) => {
    const options = { [field]: 1 } as RateLimitModuleOptions;
    await expect(
      Test.createTestingModule({ imports: [RateLimitModule.forRoot(options)] }).compile(),
    ).rejects.toThrow(
      new RateLimitConfigError(`RateLimitModule options: unknown field "${field}" (${hint})`),
    );
  });

  it('forRoot([...]), the throttler list form, and the same from a factory', async () => {
    const list = [{ ttl: 60_000, limit: 10 }] as unknown as RateLimitModuleOptions;
    const refused = new RateLimitConfigError(
      `RateLimitModule options: options must be an object, not a list of limits: those go ${NO_LIMITS_HERE}, got [{"ttl":60000,"limit":10}]`,
    );
    await expect(
      Test.createTestingModule({ imports: [RateLimitModule.forRoot(list)] }).compile(),
    ).rejects.toThrow(refused);
    const module = RateLimitModule.forRootAsync({ useFactory: () => list });
    await expect(Test.createTestingModule({ imports: [module] }).compile()).rejects.toThrow(
      refused,
    );
  });
});

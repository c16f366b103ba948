/** What bootstrap refuses of calendar windows and usage settling, naming the route and the field. */
import { describe, expect, it } from '@jest/globals';
import { Test } from '@nestjs/testing';
import { RateLimitModule, RateLimitService } from '../../lib/index.js';
import { RATE_LIMIT_POLICY } from '../../lib/rate-limit.constants.js';
import { type PolicyTemplate } from '../../lib/templates/policy-template.js';
import { decorationError, onMethod } from '../support/decoration.js';

describe('@RateLimit validation of calendar windows', () => {
  it('refuses a calendar window on an algorithm that cannot follow one', () => {
    for (const algorithm of ['sliding-window', 'token-bucket', 'leaky-bucket'] as const) {
      const error = decorationError(onMethod({ algorithm, calendar: 'day', threshold: 5 }));
      expect(error.message).toBe(
        `@RateLimit on X.m: calendar must be omitted for ${algorithm} (only sliding-window-counter and fixed-window count in calendar windows), got "day"`,
      );
    }
  });

  it('counts a calendar policy that names no algorithm in fixed windows, its function anchor too', () => {
    const templates = (define: () => unknown) =>
      Reflect.getMetadata(
        RATE_LIMIT_POLICY,
        (define() as { prototype: { m: object } }).prototype.m,
      ) as PolicyTemplate[];
    const [fixed, dynamic] = templates(
      onMethod([
        { calendar: 'month', threshold: 1000, name: 'monthly' },
        { calendar: 'day', threshold: 10, anchor: () => '2026-01-01T09:00:00Z', name: 'daily' },
      ]),
    );
    expect(fixed.algorithm).toBe('fixed-window');
    expect(fixed.fixed).toMatchObject({ algorithm: 'fixed-window', id: 'fw:monthly' });
    expect(dynamic.algorithm).toBe('fixed-window');
    expect(dynamic.fixed).toBeUndefined();
  });

  it('names the algorithm a calendar policy counts with when it refuses a burst', () => {
    expect(decorationError(onMethod({ calendar: 'day', threshold: 5, burst: 2 })).message).toBe(
      '@RateLimit on X.m: burst must be omitted for fixed-window (only token-bucket and leaky-bucket take it), got 2',
    );
    expect(
      decorationError(onMethod({ calendar: 'day', anchor: () => 0, threshold: 5, burst: 2 }))
        .message,
    ).toMatch(/^@RateLimit on X\.m: burst must be omitted for fixed-window/);
  });

  it('refuses period beside calendar, and an unknown unit', () => {
    expect(
      decorationError(onMethod({ algorithm: 'fixed-window', calendar: 'day', period: '1h' }))
        .message,
    ).toBe(
      '@RateLimit on X.m: period must be omitted with calendar, which sets the window, got "1h"',
    );
    expect(
      decorationError(onMethod({ algorithm: 'fixed-window', calendar: 'year' as never })).message,
    ).toMatch(/^@RateLimit on X\.m: calendar must be .*'day', 'week' or 'month'.*, got "year"$/);
  });

  it('refuses a time zone Intl does not know, and timeZone or anchor without calendar', () => {
    expect(
      decorationError(
        onMethod({ algorithm: 'fixed-window', calendar: 'day', timeZone: 'Mars/Olympus' }),
      ).message,
    ).toMatch(/^@RateLimit on X\.m: timeZone must be .*, got "Mars\/Olympus"$/);
    expect(decorationError(onMethod({ timeZone: 'UTC' })).message).toBe(
      '@RateLimit on X.m: timeZone must be given only with calendar, got "UTC"',
    );
    expect(decorationError(onMethod({ anchor: '2026-01-17' })).message).toBe(
      '@RateLimit on X.m: anchor must be given only with calendar, got "2026-01-17"',
    );
    expect(decorationError(onMethod({ anchor: () => '2026-01-17' })).message).toBe(
      '@RateLimit on X.m: anchor must be given only with calendar, got "a function"',
    );
  });

  it('refuses a bad anchor at startup, and checks the rest of a policy whose anchor is a function', () => {
    expect(
      decorationError(
        onMethod({ algorithm: 'fixed-window', calendar: 'month', anchor: '2026-02-30' }),
      ).message,
    ).toMatch(/^@RateLimit on X\.m: anchor must be .*, got "2026-02-30"$/);
    // A Date no window can be computed from: the range is in the message.
    expect(
      decorationError(
        onMethod({
          algorithm: 'fixed-window',
          calendar: 'month',
          timeZone: 'America/New_York',
          anchor: new Date(-8.64e15),
        }),
      ).message,
    ).toBe(
      '@RateLimit on X.m: anchor must be a date between 0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z, got "-271821-04-20T00:00:00.000Z"',
    );
    expect(
      decorationError(onMethod({ algorithm: 'gcra' as never, calendar: 'month', anchor: () => 0 }))
        .message,
    ).toMatch(/^@RateLimit on X\.m: algorithm must be one of/);
    expect(
      decorationError(onMethod({ algorithm: 'token-bucket', calendar: 'month', anchor: () => 0 }))
        .message,
    ).toMatch(/^@RateLimit on X\.m: calendar must be omitted for token-bucket/);
  });
});

describe('@RateLimit validation of settle', () => {
  it('refuses a settle that is not a function', () => {
    expect(decorationError(onMethod({ settle: 5 as never })).message).toBe(
      '@RateLimit on X.m: settle must be a function of the context and the result, got 5',
    );
  });

  it('refuses settle on a concurrency policy, and with count: failures', () => {
    expect(
      decorationError(onMethod({ algorithm: 'concurrency', threshold: 2, settle: () => 1 }))
        .message,
    ).toBe(
      '@RateLimit on X.m: settle must be omitted for concurrency, which limits calls at once, not what they use, got "a function"',
    );
    expect(decorationError(onMethod({ count: 'failures', settle: () => 1 })).message).toBe(
      `@RateLimit on X.m: settle must be omitted with count: 'failures' (a request that succeeds is given back, not settled), got "a function"`,
    );
  });
});

describe('RateLimitService: a calendar policy that names no algorithm', () => {
  it('is a fixed-window policy, and overrides of it are checked as such', async () => {
    const ref = await Test.createTestingModule({ imports: [RateLimitModule.forRoot()] }).compile();
    const limiter = ref.get(RateLimitService);
    const decision = await limiter.consume('k', {
      calendar: 'month',
      threshold: 1000,
      name: 'monthly',
    });
    expect(decision.policies[0].policy).toMatchObject({
      algorithm: 'fixed-window',
      id: 'fw:monthly',
    });
    await expect(limiter.override('monthly', { threshold: 5, burst: 2 })).rejects.toThrow(
      'RateLimitService.override: burst must be omitted for fixed-window (only token-bucket and leaky-bucket take it), got 2',
    );
    expect(() => limiter.consume('k', { algorithm: 'sliding-window', calendar: 'month' })).toThrow(
      'RateLimitService.consume: calendar must be omitted for sliding-window (only sliding-window-counter and fixed-window count in calendar windows), got "month"',
    );
    await ref.close();
  });
});

describe('RateLimitService.reserve validation', () => {
  async function service() {
    const ref = await Test.createTestingModule({ imports: [RateLimitModule.forRoot()] }).compile();
    return { limiter: ref.get(RateLimitService), close: () => ref.close() };
  }

  it('refuses a bad estimate, options it does not take, and concurrency policies', async () => {
    const { limiter, close } = await service();
    const policy = { algorithm: 'fixed-window', threshold: 100 } as const;
    await expect(limiter.reserve('k', policy, 0.5)).rejects.toThrow(
      'RateLimitService.reserve: estimate must be an integer from 0 to 1000000000, got 0.5',
    );
    await expect(limiter.reserve('k', policy, 5, { cost: 5 } as never)).rejects.toThrow(
      `RateLimitService.reserve: unknown field "cost" (the estimate is reserve()'s third argument)`,
    );
    await expect(
      limiter.reserve('k', { algorithm: 'concurrency', threshold: 2 }, 1),
    ).rejects.toThrow(
      'RateLimitService.reserve: algorithm must be a rate algorithm: a reservation settles usage, not calls at once, got "concurrency"',
    );
    await expect(limiter.run('k', policy, () => 1, { usage: 'tokens' as never })).rejects.toThrow(
      'RateLimitService.run: usage must be a function of the result giving what it used, got "tokens"',
    );
    await close();
  });

  it('refuses a second settle, and a bad actual, naming them', async () => {
    const { limiter, close } = await service();
    const ticket = await limiter.reserve('k', { algorithm: 'fixed-window', threshold: 100 }, 10);
    await expect(ticket.settle(-1)).rejects.toThrow(
      'RateLimitService.reserve: actual must be an integer from 0 to 1000000000, got -1',
    );
    await ticket.settle(10);
    await expect(ticket.settle(10)).rejects.toThrow(
      'RateLimitService.reserve: settle must be one settle() or cancel() per reservation, got "a second time"',
    );
    await expect(ticket.cancel()).rejects.toThrow(/settle must be one settle\(\) or cancel\(\)/);
    await close();
  });
});

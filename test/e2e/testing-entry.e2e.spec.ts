import { describe, expect, it } from '@jest/globals';
import { Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  RateLimitConfigError,
  RateLimitModule,
  RateLimitService,
  RateLimitStore,
} from 'nest-rate-limit';
import { RATE_LIMIT_CLOCK, RateLimitTesting, TestClock } from 'nest-rate-limit/testing';

// What the complete example of docs/testing.md does not show: the edges of each public name.
const EVERY_SECOND = { name: 'every-second', period: 1, threshold: 1 };

async function serviceOf(module: ReturnType<typeof RateLimitModule.forRoot>, clock?: unknown) {
  @Module({ imports: [module] })
  class AppModule {}
  let builder = Test.createTestingModule({ imports: [AppModule] });
  if (clock !== undefined) builder = builder.overrideProvider(RATE_LIMIT_CLOCK).useValue(clock);
  const moduleRef = await builder.compile();
  await moduleRef.init();
  return { moduleRef, service: moduleRef.get(RateLimitService) };
}

describe('TestClock', () => {
  it('starts on midnight UTC, 1 January 2025, or where it is told', () => {
    expect(new Date(new TestClock().now()).toISOString()).toBe('2025-01-01T00:00:00.000Z');
    expect(new TestClock(42).now()).toBe(42);
  });

  it('advances by milliseconds or by a duration, and answers the new time', () => {
    const clock = new TestClock(0);
    expect(clock.advance(250)).toBe(250);
    expect(clock.advance('1m')).toBe(60_250);
    expect(clock.advance('2h')).toBe(7_260_250);
    expect(clock.advance(0)).toBe(7_260_250);
    const { now } = clock;
    expect(now()).toBe(7_260_250);
  });

  it('refuses to go back, and a duration it cannot read', () => {
    const clock = new TestClock(0);
    expect(() => clock.advance(-1)).toThrow(RateLimitConfigError);
    expect(() => clock.advance('a minute')).toThrow(/TestClock\.advance: duration must be/);
    expect(() => new TestClock(Number.NaN)).toThrow(RateLimitConfigError);
    expect(clock.now()).toBe(0);
  });
});

describe('RATE_LIMIT_CLOCK', () => {
  it('takes a plain function as well as a TestClock', async () => {
    let ms = 0;
    const { moduleRef, service } = await serviceOf(RateLimitModule.forRoot(), () => ms);
    expect((await service.consume('k', EVERY_SECOND)).allowed).toBe(true);
    expect((await service.consume('k', EVERY_SECOND)).allowed).toBe(false);
    ms += 1000;
    expect((await service.consume('k', EVERY_SECOND)).allowed).toBe(true);
    await moduleRef.close();
  });

  it('wins over the clock option, which the app may set for its own reasons', async () => {
    const clock = new TestClock();
    const { moduleRef, service } = await serviceOf(
      RateLimitModule.forRoot({ clock: () => 0 }),
      clock,
    );
    await service.consume('k', EVERY_SECOND);
    clock.advance('1s');
    expect((await service.consume('k', EVERY_SECOND)).allowed).toBe(true);
    await moduleRef.close();
  });

  it('fails at startup, naming itself, on anything but a clock', async () => {
    await expect(serviceOf(RateLimitModule.forRoot(), 'now')).rejects.toThrow(
      /RATE_LIMIT_CLOCK: value must be a function returning milliseconds/,
    );
  });
});

describe('RateLimitTesting', () => {
  it('allowAll() lets RateLimitService calls through too, counting nothing', async () => {
    @Module({ imports: [RateLimitModule.forRoot()] })
    class AppModule {}
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
      .overrideProvider(RateLimitStore)
      .useValue(RateLimitTesting.allowAll())
      .compile();
    await moduleRef.init();
    const service = moduleRef.get(RateLimitService);
    for (let i = 0; i < 5; i++) {
      const decision = await service.consume('k', EVERY_SECOND);
      expect(decision).toMatchObject({ allowed: true, limit: 1, remaining: 1, retryAfterMs: 0 });
    }
    const permit = await service.acquire('k', EVERY_SECOND, { maxWait: '1s' });
    await permit.release();
    await moduleRef.close();
  });

  it('reset() empties the memory store, leaving it at work', async () => {
    const { moduleRef, service } = await serviceOf(RateLimitModule.forRoot(), new TestClock());
    await service.consume('k', EVERY_SECOND);
    expect((await service.consume('k', EVERY_SECOND)).allowed).toBe(false);
    await RateLimitTesting.reset(moduleRef);
    expect((await service.consume('k', EVERY_SECOND)).allowed).toBe(true);
    expect((await service.consume('k', EVERY_SECOND)).allowed).toBe(false);
    await moduleRef.close();
  });

  it('reset() throws, rather than leave counts behind, where limits live outside memory', async () => {
    const store = RateLimitTesting.allowAll();
    const { moduleRef } = await serviceOf(RateLimitModule.forRoot({ store }));
    await expect(RateLimitTesting.reset(moduleRef)).rejects.toThrow(
      /keeps its limits elsewhere \(Redis or a store of its own\)/,
    );
    await moduleRef.close();
  });
});

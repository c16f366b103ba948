/**
 * Quotas by the calendar in real time zones, on the memory store and on Redis through every client
 * library, under a test clock: Berlin's days of 23 and 25 hours, the end of January, and a month
 * anchored on the 31st across a leap day.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { type RateLimitPolicy } from '../../../lib/index.js';
import { resolvePolicy } from '../../../lib/policy/rate-limit.policy.js';
import { STORE_TARGETS, useClockedStores } from '../../support/stores.js';

const H = 3_600_000;
const D = 24 * H;

describe.each(STORE_TARGETS)('calendar quotas in real zones on %s', (target) => {
  const stores = useClockedStores(target);

  async function setup(at: string, policy: RateLimitPolicy<unknown>) {
    const { clock, store } = await stores();
    clock.ms = Date.parse(at);
    const resolved = resolvePolicy(policy, 'calendar zones');
    const key = `zone:{${randomUUID()}}`;
    const consume = () => store.consume([key], [resolved], [1]);
    return { clock, consume };
  }

  it('Berlin, the day clocks go forward: 23 hours, reset at the next midnight', async () => {
    // 10:00 CEST; the day began at 00:00 CET (23:00Z) and ends at 00:00 CEST (22:00Z).
    const s = await setup('2026-03-29T08:00:00Z', {
      algorithm: 'fixed-window',
      calendar: 'day',
      timeZone: 'Europe/Berlin',
      threshold: 2,
    });
    expect(await s.consume()).toMatchObject({ allowed: true, remaining: 1, resetAfterMs: 14 * H });
    await s.consume();
    expect(await s.consume()).toMatchObject({ allowed: false, retryAfterMs: 14 * H });
    s.clock.ms = Date.parse('2026-03-29T22:00:00Z') - 1;
    expect(await s.consume()).toMatchObject({ allowed: false, retryAfterMs: 1 });
    s.clock.advance(1);
    expect(await s.consume()).toMatchObject({ allowed: true, remaining: 1, resetAfterMs: D });
  });

  it('Berlin, the day clocks go back: the previous day weighs by the share of 25 hours ahead', async () => {
    // October 24 (24 hours) is full; October 25 lasts 25 hours, from 22:00Z.
    const s = await setup('2026-10-24T09:00:00Z', {
      algorithm: 'sliding-window-counter',
      calendar: 'day',
      timeZone: 'Europe/Berlin',
      threshold: 10,
    });
    for (let i = 0; i < 10; i++) await s.consume();
    s.clock.ms = Date.parse('2026-10-25T03:00:00Z');
    // Five hours in, 20/25 of the previous day's 10 count: 8.
    expect(await s.consume()).toMatchObject({ allowed: true, remaining: 1 });
    expect(await s.consume()).toMatchObject({ allowed: true, remaining: 0 });
    expect(await s.consume()).toMatchObject({
      allowed: false,
      retryAfterMs: 2.5 * H,
      // To the end of October 26, the day this one's count still weighs in.
      resetAfterMs: 20 * H + 24 * H,
    });
  });

  it('a month ends on its last day: January after 31 days, February after 28', async () => {
    const s = await setup('2026-01-31T12:00:00Z', {
      algorithm: 'fixed-window',
      calendar: 'month',
      threshold: 1,
    });
    expect(await s.consume()).toMatchObject({ allowed: true, resetAfterMs: 12 * H });
    expect(await s.consume()).toMatchObject({ allowed: false, retryAfterMs: 12 * H });
    s.clock.advance(12 * H);
    expect(await s.consume()).toMatchObject({ allowed: true, resetAfterMs: 28 * D });
  });

  it('a month anchored on the 31st renews on a leap day, then on March 31', async () => {
    const s = await setup('2028-02-29T08:00:00Z', {
      algorithm: 'fixed-window',
      calendar: 'month',
      anchor: '2028-01-31T09:00:00Z',
      threshold: 1,
    });
    expect(await s.consume()).toMatchObject({ allowed: true, resetAfterMs: H });
    expect(await s.consume()).toMatchObject({ allowed: false, retryAfterMs: H });
    s.clock.advance(H);
    expect(await s.consume()).toMatchObject({ allowed: true, resetAfterMs: 31 * D });
  });
});

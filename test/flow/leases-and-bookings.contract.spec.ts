/**
 * The store operations behind flow control, on the memory store and on Redis through both client
 * libraries, under a test clock: bucket reservations (booked slots, spacing, a wait too long),
 * and concurrency leases (taken, freed, renewed, expired, combined with a rate policy).
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { type RateLimitPolicy } from '../../lib/index.js';
import { type RateAlgorithm } from '../../lib/algorithms/algorithm.js';
import { resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import { leaseOf } from '../../lib/stores/decision.js';
import { STORE_TARGETS, useClockedStores } from '../support/stores.js';

describe.each(STORE_TARGETS)('bookings and leases on %s', (target) => {
  const stores = useClockedStores(target);

  async function setup() {
    const { clock, store } = await stores();
    const key = () => `flow:{${randomUUID()}}`;
    return { clock, store, key };
  }
  const policy = (p: RateLimitPolicy<unknown>) => resolvePolicy(p, 'flow');

  describe.each<RateAlgorithm>(['leaky-bucket', 'token-bucket'])('%s', (algorithm) => {
    const spaced = policy({ algorithm, period: '1s', threshold: 10, burst: 1 });

    it('books each slot one interval after the last, in one call, and refuses a wait too long', async () => {
      const { store, key } = await setup();
      const k = key();
      const waits: number[] = [];
      for (let i = 0; i < 5; i++) {
        const d = await store.reserve!([k], [spaced], [1], 10_000);
        expect(d.allowed).toBe(true);
        waits.push(d.waitMs ?? 0);
      }
      expect(waits).toEqual([0, 100, 200, 300, 400]);
      const before = await store.peek!([k], [spaced], [1]);
      // The next slot is 500 ms away: a 450 ms wait is refused, with that retry time, and booked nothing.
      const refused = await store.reserve!([k], [spaced], [1], 450);
      expect(refused).toMatchObject({ allowed: false, retryAfterMs: 500 });
      expect(refused.waitMs).toBeUndefined();
      expect(await store.peek!([k], [spaced], [1])).toEqual(before);
      // A plain consume never books ahead.
      expect((await store.consume([k], [spaced], [1])).allowed).toBe(false);
    });

    it('gives a booked slot back on refund, and never allows a cost above the burst', async () => {
      const { store, key } = await setup();
      const k = key();
      await store.reserve!([k], [spaced], [1], 10_000);
      const booked = await store.reserve!([k], [spaced], [1], 10_000);
      expect(booked.waitMs).toBe(100);
      await store.refund!([k], [spaced], [1], booked);
      expect((await store.reserve!([k], [spaced], [1], 10_000)).waitMs).toBe(100);
      const never = await store.reserve!([k], [spaced], [2], 10_000);
      expect(never).toMatchObject({ allowed: false, retryAfterMs: Infinity });
    });

    it('lets the bucket drain on time: after the waits have passed, a request goes at once', async () => {
      const { store, key, clock } = await setup();
      const k = key();
      for (let i = 0; i < 3; i++) await store.reserve!([k], [spaced], [1], 10_000);
      clock.advance(300);
      expect(await store.reserve!([k], [spaced], [1], 0)).toMatchObject({ allowed: true });
      expect((await store.reserve!([k], [spaced], [1], 0)).allowed).toBe(false);
    });
  });

  describe('concurrency', () => {
    const two = policy({ algorithm: 'concurrency', period: '10s', threshold: 2 });
    const rate = policy({ period: '1m', threshold: 3, name: 'rate' });

    it('hands out threshold leases, frees them on release, and answers a full key with a 1 s retry', async () => {
      const { store, key } = await setup();
      const k = key();
      const a = await store.consume([k], [two], [1]);
      const b = await store.consume([k], [two], [1]);
      expect([a.remaining, b.remaining]).toEqual([1, 0]);
      const full = await store.consume([k], [two], [1]);
      expect(full).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 1000 });
      expect(await store.release!([k], [two], [1], a)).toMatchObject({
        allowed: true,
        remaining: 1,
      });
      // Releasing twice frees nothing more.
      expect(await store.release!([k], [two], [1], a)).toMatchObject({ remaining: 1 });
      expect((await store.consume([k], [two], [1])).allowed).toBe(true);
      expect((await store.consume([k], [two], [3])).retryAfterMs).toBe(Infinity);
    });

    it('lets a lease expire after its period unless renewed, and reports a lost lease', async () => {
      const { store, key, clock } = await setup();
      const [kept, dropped] = [key(), key()];
      const held = await store.consume([kept], [two], [2]);
      const lost = await store.consume([dropped], [two], [2]);
      for (let i = 0; i < 5; i++) {
        clock.advance(4000);
        expect((await store.renew!([kept], [two], [2], held)).allowed).toBe(true);
      }
      // 20 s later, the renewed lease still fills the key; the other expired after 10 s.
      expect((await store.peek!([kept], [two], [1])).allowed).toBe(false);
      expect(await store.peek!([dropped], [two], [1])).toMatchObject({
        allowed: true,
        remaining: 1,
      });
      expect((await store.renew!([dropped], [two], [2], lost)).allowed).toBe(false);
    });

    it('gives concurrent holders distinct leases under one clock reading', async () => {
      const { store, key } = await setup();
      const k = key();
      const wide = policy({ algorithm: 'concurrency', period: '10s', threshold: 6 });
      const leases = [
        await store.consume([k], [wide], [2]),
        await store.consume([k], [wide], [1]),
        await store.consume([k], [wide], [3]),
      ];
      expect(leases.map((d) => d.remaining)).toEqual([4, 3, 0]);
      await store.release!([k], [wide], [1], leases[1]);
      expect((await store.peek!([k], [wide], [1])).remaining).toBe(0);
      await store.release!([k], [wide], [3], leases[2]);
      expect((await store.peek!([k], [wide], [1])).remaining).toBe(3);
    });

    it('takes no lease for rate policies alone, whichever script decides them', async () => {
      const { store, key } = await setup();
      const mixed = [rate, policy({ algorithm: 'fixed-window', period: '1m', threshold: 3 })];
      const decision = await store.consume([key(), key()], mixed, [1, 1]);
      expect(decision.allowed).toBe(true);
      expect(leaseOf(decision)).toBeUndefined();
      expect(leaseOf(await store.consume([key()], [two], [1]))).toEqual(expect.any(Number));
    });

    it('combines with a rate policy all or nothing', async () => {
      const { store, key } = await setup();
      const [kc, kr] = [key(), key()];
      const both = (cost = 1) => store.consume([kc, kr], [two, rate], [cost, cost]);
      const first = await both();
      const second = await both();
      // No lease free: the rate policy counts nothing.
      expect((await both()).policies.map((p) => p.allowed)).toEqual([false, true]);
      expect(await store.peek!([kr], [rate], [1])).toMatchObject({ allowed: true, remaining: 0 });
      await store.release!([kc, kr], [two, rate], [1, 1], first);
      expect(await both()).toMatchObject({ allowed: true });
      await store.release!([kc, kr], [two, rate], [1, 1], second);
      // A lease is free, but the rate policy rejects: no lease is taken.
      const rejected = await both();
      expect(rejected.policies.map((p) => p.allowed)).toEqual([true, false]);
      expect(await store.peek!([kc], [two], [1])).toMatchObject({ allowed: true, remaining: 0 });
    });
  });
});

/**
 * Keys written before entries were weighted held one sorted-set member per unit and no `total`.
 * Such a key, left in Redis by an earlier version, is read with each member as one unit: counts
 * stay exact, and a wait may come out longer than exact, never shorter, until the key expires
 * (within one period).
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { RedisStore } from '../../../lib/index.js';
import { resolvePolicy } from '../../../lib/policy/rate-limit.policy.js';
import { toMicros } from '../../../lib/stores/clock.js';
import { CLIENT_KINDS } from '../../support/clients.js';
import { TestClock, useRedis } from '../../support/stores.js';
import { entriesOf, unitsIn } from '../../support/weighted-sets.js';

const LOG = resolvePolicy({ period: '1s', threshold: 4 }, 'former layout');
const BUCKET = resolvePolicy(
  { algorithm: 'token-bucket', period: '1s', threshold: 4 },
  'former layout',
);
const COUNTER = resolvePolicy(
  { algorithm: 'sliding-window-counter', period: '1s', threshold: 4 },
  'former layout',
);
const LEASES = resolvePolicy(
  { algorithm: 'concurrency', period: '1s', threshold: 4 },
  'former layout',
);

describe.each(CLIENT_KINDS)('keys in the former layout, through %s', (kind) => {
  const redis = useRedis('redis');

  async function setup() {
    const clock = new TestClock();
    const store = new RedisStore({ client: await redis().connect(kind), clock: clock.now });
    await store.warmUp();
    return { clock, store, admin: redis().client(), key: `former:{${randomUUID()}}` };
  }

  it('a sliding log of one member per unit counts each member once, and waits no less than exact', async () => {
    const { clock, store, admin, key } = await setup();
    const start = toMicros(clock.now());
    // As the former script wrote them: a request of cost 2 at the start, one of cost 1 100 ms on.
    await admin.zadd(key, start, start, start, start + 1, start + 100_000, start + 100_000);
    await admin.pexpire(key, 60_000);
    clock.advance(200);

    expect(await store.consume([key], [LOG], [1])).toMatchObject({ allowed: true, remaining: 0 });
    expect(await unitsIn(admin, key)).toBe(4);
    const rejected = await store.consume([key], [LOG], [1]);
    // Exactly, the request of cost 2 leaving (800 ms on) would make room; never sooner.
    expect(rejected.allowed).toBe(false);
    expect(rejected.retryAfterMs).toBeGreaterThanOrEqual(800);
    expect(rejected.retryAfterMs).toBeLessThanOrEqual(1000);

    // The two members of the first request leave together, and free two units.
    clock.advance(800);
    expect(await store.consume([key], [LOG], [2])).toMatchObject({ allowed: true, remaining: 0 });
    expect(await unitsIn(admin, key)).toBe(4);
    expect((await entriesOf(admin, key)).map((e) => e.units)).toEqual([1, 1, 2]);
  });

  it('concurrency members of the former layout count as one unit each until they expire', async () => {
    const { clock, store, admin, key } = await setup();
    const now = toMicros(clock.now());
    // A lease of cost 3 as the former script took it: its id and the next two integers.
    await admin.zadd(key, now + 500_000, now, now + 500_000, now + 1, now + 500_000, now + 2);
    await admin.pexpire(key, 60_000);

    const taken = await store.consume([key], [LEASES], [1]);
    expect(taken).toMatchObject({ allowed: true, remaining: 0 });
    expect((await store.consume([key], [LEASES], [1])).allowed).toBe(false);
    clock.advance(500);
    expect(await store.consume([key], [LEASES], [3])).toMatchObject({
      allowed: true,
      remaining: 0,
    });
    expect(await unitsIn(admin, key)).toBe(4);
  });

  it('a token bucket kept in a hash is read as it was, then written in the packed layout', async () => {
    const { clock, store, admin, key } = await setup();
    const now = toMicros(clock.now());
    // Two tokens left 250 ms ago (one more has refilled since), full 1 s before that, never given back.
    await admin.hset(key, 't', 2, 'at', now - 250_000, 's', 1_000_000, 'h', 4, 'g', 0);
    await admin.pexpire(key, 60_000);

    expect(await store.consume([key], [BUCKET], [1])).toMatchObject({
      allowed: true,
      remaining: 2,
    });
    expect(await admin.type(key)).toBe('string');
    expect(await store.consume([key], [BUCKET], [2])).toMatchObject({
      allowed: true,
      remaining: 0,
    });
    expect((await store.consume([key], [BUCKET], [1])).allowed).toBe(false);
  });

  it('a sliding-window counter kept in a hash is read as it was, then written in the packed layout', async () => {
    const { clock, store, admin, key } = await setup();
    // At the start of a window: 1 in it, 2 in the one before, which counts whole at its start.
    clock.ms = Math.ceil(clock.ms / 1000) * 1000;
    const start = toMicros(clock.now());
    await admin.hset(key, 'w', start, 'c', 1, 'p', 2);
    await admin.pexpire(key, 60_000);

    expect(await store.consume([key], [COUNTER], [1])).toMatchObject({
      allowed: true,
      remaining: 0,
    });
    expect(await admin.type(key)).toBe('string');
    expect((await store.consume([key], [COUNTER], [1])).allowed).toBe(false);
  });
});

/**
 * A stall of this process (a GC pause, a synchronous burst) is not a slow Redis. The deadline is a
 * local timer, and timers run before I/O: after a stall, the deadline fires in the same turn as the
 * replies Redis sent in time, which are already waiting on the socket. They must win, or every
 * decision in flight is answered by the fallback although Redis counted it.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { RateLimitModule, type RateLimitPolicy, RateLimitService } from '../../lib/index.js';
import { CLIENT_KINDS } from '../support/clients.js';
import { useRedis } from '../support/stores.js';
import { unitsIn } from '../support/weighted-sets.js';
import { stateKeys } from '../support/decision-ids.js';

const IN_FLIGHT = 256;
const STALL_MS = 200;
const THRESHOLD = 1000;
const POLICY: RateLimitPolicy = { period: '1h', threshold: THRESHOLD };

/** Blocks the event loop, as a long synchronous task or a GC pause does. */
function stall(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

describe.each(CLIENT_KINDS)('a stall of this process is not a slow Redis (%s)', (kind) => {
  const redis = useRedis('redis');
  let app: INestApplication | undefined;

  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it(`answers ${IN_FLIGHT} decisions in flight through a ${STALL_MS} ms stall from Redis, each counted once`, async () => {
    const prefix = `stall-${kind.replace(/\W/g, '')}-${Date.now()}`;
    const client = await redis().connect(kind);
    const ref = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ redis: client, keyPrefix: prefix, timeout: 100 })],
    }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.init();
    const limiter = app.get(RateLimitService);
    expect((await limiter.consume('warm', POLICY)).degraded).toBeUndefined();

    // Redis holds the decisions until just before the stall, then answers them at once, well
    // within the timeout: so both clients have every one of them on the wire (node-redis writes
    // 16 KB at a time, about 90 decisions, the rest once the socket drains) and none is answered
    // before the stall.
    await redis().shared.client('PAUSE', 5000, 'WRITE');
    let answered = 0;
    const inFlight = Array.from({ length: IN_FLIGHT }, () =>
      limiter.consume('burst', POLICY).finally(() => answered++),
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    // The stall begins after the poll phase, as one in a request's handler or a setImmediate does:
    // the next turn of the event loop runs its timers before it reads the socket.
    await new Promise((resolve) => setImmediate(resolve));
    // An ioredis command is written as it is sent: Redis gets this before the stall begins.
    void redis().shared.client('UNPAUSE');
    const answeredBeforeStall = answered;
    stall(STALL_MS);
    const decisions = await Promise.all(inFlight);

    const degraded = decisions.filter((d) => d.degraded !== undefined).length;
    const [key] = stateKeys(await redis().shared.keys(`${prefix}:{burst}*`));
    const counted = key === undefined ? 0 : await unitsIn(redis().shared, key);
    console.log(
      `${kind}: ${IN_FLIGHT - answeredBeforeStall} of ${IN_FLIGHT} in flight when the stall began; ` +
        `${degraded} answered by the fallback; ${counted} counted in Redis`,
    );
    // Most were still waiting for their reply when the stall began, or the test proves nothing.
    expect(answeredBeforeStall).toBeLessThan(IN_FLIGHT / 2);
    expect(degraded).toBe(0);
    expect(counted).toBe(IN_FLIGHT);
    // Each was answered with its own place in the count: exact, as without the stall.
    const remaining = decisions.map((d) => d.remaining).sort((a, b) => b - a);
    expect(remaining).toEqual(Array.from({ length: IN_FLIGHT }, (_, i) => THRESHOLD - 1 - i));
  });
});

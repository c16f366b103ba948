/**
 * A stall of this process (a GC pause, a synchronous burst) is not a slow Redis. The deadline is a
 * local timer, and timers run before I/O: after a stall, the deadline fires in the same turn as the
 * replies Redis sent in time, which are already waiting on the socket. They must win, or every
 * decision in flight is answered by the fallback although Redis counted it.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  type RateLimitDecision,
  RateLimitModule,
  type RateLimitPolicy,
  RateLimitService,
} from '../../lib/index.js';
import { CLIENT_KINDS, openClient } from '../support/clients.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { unitsIn } from '../support/weighted-sets.js';
import { stateKeys } from '../support/decision-ids.js';
import { CapturingLogger, createLimiterApp, sleep } from './traffic.js';

const IN_FLIGHT = 256;
// Room for every decision to reach Redis, and be run there, before its deadline, even while the
// CPU is elsewhere for a while (late in a full run, a busy machine or a collection of Jest's
// large heap has held a burst of 256 back for over a second).
const TIMEOUT_MS = 1000;
// Longer than the timeout and a tick of the deadlines: when it ends, every deadline has passed.
const STALL_MS = 1050;
// A burst that reached Redis too late to prove anything is sent again, as a new application.
const ATTEMPTS = 4;
const THRESHOLD = 1000;
const POLICY: RateLimitPolicy = { period: '1h', threshold: THRESHOLD };
// Long enough that nothing but the stall makes a decision late, even on a busy machine.
const QUEUED_TIMEOUT_MS = 500;

/** Blocks the event loop, as a long synchronous task or a GC pause does. */
function stall(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

describe.each(CLIENT_KINDS)('a stall of this process is not a slow Redis (%s)', (kind) => {
  let redis: TestRedis;
  let proxy: TcpProxy;
  let app: INestApplication | undefined;

  beforeAll(async () => {
    redis = await startRedis();
    proxy = await startTcpProxy(redis.port);
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });
  afterAll(async () => {
    await proxy.close();
    await redis.stop();
  });

  /** The units Redis counted under `prefix` for the key `burst`. */
  const countedIn = async (prefix: string) => {
    const [key] = stateKeys(await redis.shared.keys(`${prefix}:{burst}*`));
    return key === undefined ? 0 : unitsIn(redis.shared, key);
  };

  interface Burst {
    readonly answeredBeforeStall: number;
    readonly decisions: readonly RateLimitDecision[];
    readonly counted: number;
  }

  /**
   * Sends the decisions and stalls once Redis has counted them all. `undefined` when they took
   * longer than the timeout to get there (the CPU was elsewhere all that while): their deadlines
   * passed before the stall, which then proves nothing.
   */
  const burstThroughStall = async (): Promise<Burst | undefined> => {
    const prefix = `stall-${kind.replace(/\W/g, '')}-${Date.now()}`;
    const client = await openClient(kind, { host: '127.0.0.1', port: proxy.port });
    const ref = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ redis: client, keyPrefix: prefix, timeout: TIMEOUT_MS })],
    }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.init();
    const limiter = app.get(RateLimitService);
    expect((await limiter.consume('warm', POLICY)).degraded).toBeUndefined();

    // Redis runs every decision at once, and the network holds its replies until just before the
    // stall: so they arrive while this process is blocked, all of them sent in time. Waiting for
    // Redis to have counted them all, rather than for a while, leaves no decision behind in a
    // client that writes a burst over several turns (node-redis writes 16 KB a turn).
    const release = proxy.holdReplies();
    let answered = 0;
    const sentAt = performance.now();
    const inFlight = Array.from({ length: IN_FLIGHT }, () =>
      limiter.consume('burst', POLICY).finally(() => answered++),
    );
    while ((await countedIn(prefix)) < IN_FLIGHT && performance.now() - sentAt < TIMEOUT_MS) {
      await sleep(2);
    }
    // The stall begins after the poll phase, as one in a request's handler or a setImmediate does:
    // the next turn of the event loop runs its timers before it reads the socket.
    await new Promise((resolve) => setImmediate(resolve));
    const countedBeforeStall = await countedIn(prefix);
    const waited = performance.now() - sentAt;
    const answeredBeforeStall = answered;
    release();
    stall(STALL_MS);
    const decisions = await Promise.all(inFlight);
    const counted = await countedIn(prefix);
    const degraded = decisions.filter((d) => d.degraded !== undefined).length;
    console.log(
      `${kind}: ${countedBeforeStall} of ${IN_FLIGHT} counted in Redis after ${waited.toFixed(0)} ms, ` +
        `${IN_FLIGHT - answeredBeforeStall} in flight when the stall began; ` +
        `${degraded} answered by the fallback; ${counted} counted in Redis`,
    );
    if (countedBeforeStall < IN_FLIGHT || waited >= TIMEOUT_MS) {
      await app.close();
      app = undefined;
      return undefined;
    }
    return { answeredBeforeStall, decisions, counted };
  };

  it(`answers ${IN_FLIGHT} decisions in flight through a ${STALL_MS} ms stall from Redis, each counted once`, async () => {
    let burst: Burst | undefined;
    for (let attempt = 0; attempt < ATTEMPTS && burst === undefined; attempt++) {
      burst = await burstThroughStall();
    }
    // Every decision had reached Redis before any deadline passed, or the test proves nothing.
    expect(burst).toBeDefined();
    const { answeredBeforeStall, decisions, counted } = burst!;
    // The network held every reply: none could be answered before the stall.
    expect(answeredBeforeStall).toBe(0);
    expect(decisions.filter((d) => d.degraded !== undefined)).toHaveLength(0);
    expect(counted).toBe(IN_FLIGHT);
    // Each was answered with its own place in the count: exact, as without the stall.
    const remaining = decisions.map((d) => d.remaining).sort((a, b) => b - a);
    expect(remaining).toEqual(Array.from({ length: IN_FLIGHT }, (_, i) => THRESHOLD - 1 - i));
  });

  it('fails the decisions a stall kept from going out, without taking Redis for down', async () => {
    const logger = new CapturingLogger();
    const client = await openClient(kind, { host: '127.0.0.1', port: redis.port });
    app = await createLimiterApp(
      { redis: client, keyPrefix: `queued-${Date.now()}`, timeout: QUEUED_TIMEOUT_MS },
      logger,
    );
    const limiter = app.get(RateLimitService);
    expect((await limiter.consume('warm', POLICY)).degraded).toBeUndefined();

    // One decision out; those made meanwhile wait for the end of the turn to go as a batch (or,
    // in a client that writes over several turns, in the client). The stall holds them past
    // their deadline before they leave this process: the fallback answers them, as the timeout
    // says, and Redis, which never saw them late, has done nothing to be taken for down.
    // The stall runs at the end of this turn, before the batch that the decisions wait for.
    const stalled = new Promise<void>((resolve) =>
      setImmediate(() => resolve(stall(QUEUED_TIMEOUT_MS + 200))),
    );
    const queued = Array.from({ length: 50 }, (_, i) => limiter.consume(`queued-${i}`, POLICY));
    await stalled;
    const answers = await Promise.all(queued);
    expect(answers.filter((d) => d.degraded !== undefined && d.degraded !== 'memory')).toEqual([]);

    const next = await limiter.consume('after', POLICY);
    expect(logger.warnings).toEqual([]);
    expect(next.degraded).toBeUndefined();
  });
});

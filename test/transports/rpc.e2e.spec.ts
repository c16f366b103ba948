/** `@RateLimit` on microservice handlers: a real TCP microservice and a real TCP client. */
import { afterEach, describe, expect, it } from '@jest/globals';
import { firstValueFrom, timeout } from 'rxjs';
import { type RateLimitDecision } from '../../lib/index.js';
import { type RateLimitRootOptions } from '../../lib/options/rate-limit.options.js';
import { uniquePrefix, uniqueUser } from '../contract/http/fixtures/app.js';
import { useRedis, REDIS_DECIDES_MS } from '../support/stores.js';
import { waitFor } from '../support/wait-for.js';
import { brokenStore } from './fixtures/broken-store.js';
import { LogCapture } from './fixtures/log-capture.js';
import { AuditLog, createRpcApp, type RpcApp } from './fixtures/rpc-app.js';
import { stateKeys } from '../support/decision-ids.js';

/** What the client receives when the microservice turns a message away. */
interface RpcErrorPayload {
  status: string;
  statusCode?: number;
  message: string;
  retryAfterMs?: number;
  retryAfter?: number;
}

type Outcome = { answer: unknown } | { error: RpcErrorPayload };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('microservice handlers over TCP', () => {
  const redis = useRedis('redis');
  const running: RpcApp[] = [];

  async function app(options: RateLimitRootOptions = {}, logger: LogCapture | false = false) {
    const created = await createRpcApp(
      { redis: redis().url, timeout: REDIS_DECIDES_MS, keyPrefix: uniquePrefix(), ...options },
      logger,
    );
    running.push(created);
    return created;
  }

  afterEach(async () => {
    await Promise.all(running.splice(0).map((a) => a.close()));
  });

  async function send(a: RpcApp, pattern: unknown, data: unknown): Promise<Outcome> {
    try {
      return { answer: await firstValueFrom(a.client.send(pattern, data)) };
    } catch (error) {
      return { error: error as RpcErrorPayload };
    }
  }

  async function series(a: RpcApp, pattern: unknown, n: number, data: unknown) {
    const out: Outcome[] = [];
    for (let i = 0; i < n; i++) out.push(await send(a, pattern, data));
    return out;
  }

  const codes = (outcomes: Outcome[]) =>
    outcomes.map((o) => ('answer' in o ? 'ok' : o.error.statusCode));
  const sum = { cmd: 'sum' };

  it("counts only failed calls with count: 'failures', through the interceptor", async () => {
    const a = await app();
    const user = { id: uniqueUser() };
    const passing = await series(a, 'check', 5, { pass: true, user });
    expect(passing.map((o) => ('answer' in o ? o.answer : o.error))).toEqual(
      Array(5).fill('passed'),
    );
    const failing = await series(a, 'check', 3, { pass: false, user });
    expect(failing.map((o) => ('error' in o ? o.error.message : 'ok'))).toEqual([
      'check failed',
      'check failed',
      'Too Many Requests',
    ]);
    // Now even a call that would pass is turned away: two failures used the quota up.
    expect(codes(await series(a, 'check', 1, { pass: true, user }))).toEqual([429]);
  });

  it('answers a @MessagePattern twice, then an RpcException with retryAfterMs; the next call after the wait passes', async () => {
    const a = await app();
    const data = { numbers: [1, 2, 3], user: { id: uniqueUser() } };
    const outcomes = await series(a, sum, 3, data);

    expect(outcomes.slice(0, 2)).toEqual([{ answer: 6 }, { answer: 6 }]);
    const third = outcomes[2];
    if (!('error' in third)) throw new Error('the third message was not turned away');
    expect(third.error).toMatchObject({
      status: 'error',
      statusCode: 429,
      message: 'Too Many Requests',
      retryAfter: 1,
    });
    const wait = third.error.retryAfterMs!;
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(1000);
    await sleep(wait + 50);
    expect(await send(a, sum, data)).toEqual({ answer: 6 });
  });

  it("keys on rpc:<pattern> and the message's user, else the caller's TCP address", async () => {
    const keyPrefix = uniquePrefix();
    const a = await app({ keyPrefix });
    const [alice, bob] = [uniqueUser(), uniqueUser()];
    const as = (id: string) => ({ numbers: [1], user: { id } });
    expect(codes(await series(a, sum, 3, as(alice)))).toEqual(['ok', 'ok', 429]);
    expect(codes(await series(a, sum, 1, as(bob)))).toEqual(['ok']);
    expect(codes(await series(a, sum, 3, { numbers: [1] }))).toEqual(['ok', 'ok', 429]);
    expect(codes(await series(a, 'echo', 5, { numbers: [1] }))).toEqual(Array(5).fill('ok'));

    // Nest sends an object pattern as JSON; its braces are escaped in the key.
    const route = 'rpc:%7B"cmd":"sum"%7D';
    expect(stateKeys(await redis().client().keys(`${keyPrefix}:*`)).sort()).toEqual(
      [`user:${alice}`, `user:${bob}`, 'ip:127.0.0.1']
        .map((tracker) => `${keyPrefix}:{${route}|${tracker}}:0:sw:2-per-1s`)
        .sort(),
    );
  });

  it('shares a scoped budget between two message patterns, keyed by the caller', async () => {
    const keyPrefix = uniquePrefix();
    const a = await app({ keyPrefix });
    const data = { numbers: [1, 2], user: { id: uniqueUser() } };
    const outcomes = [];
    for (const pattern of ['min', 'max', 'min']) outcomes.push(await send(a, pattern, data));
    expect(codes(outcomes)).toEqual(['ok', 'ok', 429]);
    expect(stateKeys(await redis().client().keys(`${keyPrefix}:*`))).toEqual([
      `${keyPrefix}:{user:${data.user.id}}@n|stats:sw:stats`,
    ]);
  });

  it('drops an @EventPattern event over the limit before its handler runs', async () => {
    const limited: RateLimitDecision[] = [];
    const a = await app({ onLimited: (_context, decision) => limited.push(decision) });
    const user = { id: uniqueUser() };
    for (let i = 1; i <= 3; i++) await firstValueFrom(a.client.emit('audit', { i, user }));
    const audit = a.microservice.get(AuditLog);
    // Events are handled concurrently, so wait until all three were either recorded or dropped.
    await waitFor('three events handled or dropped', 2000, async () =>
      audit.entries.length + limited.length === 3
        ? true
        : `${audit.entries.length} recorded, ${limited.length} dropped`,
    );
    expect(audit.entries).toHaveLength(2);
    expect(limited).toHaveLength(1);
    expect(limited[0]).toMatchObject({ allowed: false, limit: 2, remaining: 0 });
  });

  it('uses getTracker when given, with the microservice context', async () => {
    const a = await app({
      getTracker: (context) =>
        `tenant:${context.switchToRpc().getData<{ tenant: string }>().tenant}`,
    });
    const tenant = uniqueUser();
    const calls = [
      { numbers: [1], tenant, user: { id: uniqueUser() } },
      { numbers: [1], tenant, user: { id: uniqueUser() } },
      { numbers: [1], tenant, user: { id: uniqueUser() } },
      { numbers: [1], tenant: uniqueUser() },
    ];
    const outcomes = [];
    for (const data of calls) outcomes.push(await send(a, sum, data));
    expect(codes(outcomes)).toEqual(['ok', 'ok', 429, 'ok']);
  });

  it("answers a 503 RpcException with a wait while the store fails under onStoreError: 'deny'", async () => {
    const a = await app({ redis: undefined, store: brokenStore(), onStoreError: 'deny' });
    const outcome = await send(a, sum, { numbers: [1] });
    if (!('error' in outcome)) throw new Error('the message was not turned away');
    expect(outcome.error).toMatchObject({
      status: 'error',
      statusCode: 503,
      message: 'Rate limiting is unavailable',
    });
    expect(outcome.error.retryAfterMs).toBeGreaterThan(0);
  });

  describe('a getTracker whose promise never settles', () => {
    const never = () => new Promise<string>(() => {});
    /** Gives up long after `functionTimeout`, so that a message left unanswered fails the test. */
    async function sendOrGiveUp(a: RpcApp, data: unknown): Promise<Outcome> {
      try {
        return { answer: await firstValueFrom(a.client.send(sum, data).pipe(timeout(3000))) };
      } catch (error) {
        return { error: error as RpcErrorPayload };
      }
    }

    it("is answered at functionTimeout by onStoreError: 'deny' with a 503 RpcException", async () => {
      const a = await app({ getTracker: never, functionTimeout: 50, onStoreError: 'deny' });
      const outcome = await sendOrGiveUp(a, { numbers: [1] });
      if (!('error' in outcome)) throw new Error('the message was not turned away');
      expect(outcome.error).toMatchObject({
        status: 'error',
        statusCode: 503,
        message: 'Rate limiting is unavailable',
      });
    });

    it("is counted by the default tracker in memory under onStoreError: 'memory'", async () => {
      const a = await app({ getTracker: never, functionTimeout: 50, onStoreError: 'memory' });
      const data = { numbers: [1, 2], user: { id: uniqueUser() } };
      const outcomes = [];
      for (let i = 0; i < 3; i++) outcomes.push(await sendOrGiveUp(a, data));
      expect(codes(outcomes)).toEqual(['ok', 'ok', 429]);
      expect(outcomes[0]).toEqual({ answer: 3 });
    });
  });

  it('does not log a rejected message as an error', async () => {
    const logs = new LogCapture();
    const a = await app({}, logs);
    const data = { numbers: [1], user: { id: uniqueUser() } };
    expect(codes(await series(a, sum, 4, data))).toEqual(['ok', 'ok', 429, 429]);
    expect(logs.entries.length).toBeGreaterThan(0);
    expect(logs.errors).toEqual([]);
  });

  it('runs skipIf, onDecision and onLimited with the microservice context', async () => {
    const decided: Array<[string, unknown, boolean]> = [];
    const limited: RateLimitDecision[] = [];
    const a = await app({
      skipIf: (context) =>
        context.switchToRpc().getData<{ internal?: boolean }>().internal === true,
      onDecision: (context, decision) =>
        decided.push([
          context.getType(),
          context.switchToRpc().getContext<{ getPattern(): string }>().getPattern(),
          decision.allowed,
        ]),
      onLimited: (_context, decision) => limited.push(decision),
    });
    const user = { id: uniqueUser() };
    expect(codes(await series(a, sum, 3, { numbers: [1], user, internal: true }))).toEqual([
      'ok',
      'ok',
      'ok',
    ]);
    expect(codes(await series(a, sum, 3, { numbers: [1], user }))).toEqual(['ok', 'ok', 429]);
    const pattern = '{"cmd":"sum"}';
    expect(decided).toEqual([
      ['rpc', pattern, true],
      ['rpc', pattern, true],
      ['rpc', pattern, false],
    ]);
    expect(limited).toHaveLength(1);
    expect(limited[0]).toMatchObject({ allowed: false, remaining: 0 });
  });
});

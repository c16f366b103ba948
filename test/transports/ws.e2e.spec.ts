/** `@RateLimit` on WebSocket gateways: Socket.IO, a real app and a real client. */
import { afterEach, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { type Socket } from 'socket.io-client';
import { type RateLimitDecision } from '../../lib/index.js';
import { type RateLimitRootOptions } from '../../lib/options/rate-limit.options.js';
import { uniquePrefix, uniqueUser } from '../contract/http/fixtures/app.js';
import { useRedis, REDIS_DECIDES_MS } from '../support/stores.js';
import { brokenStore } from './fixtures/broken-store.js';
import { LogCapture } from './fixtures/log-capture.js';
import { connect, createWsApp } from './fixtures/ws-app.js';
import { stateKeys } from '../support/decision-ids.js';

/** What the gateway's exception filter sends on the `exception` event. */
interface ExceptionPayload {
  status: string;
  statusCode?: number;
  message: string;
  retryAfterMs?: number;
  retryAfter?: number;
}

/** The client's view of one message: the handler's answer, or the exception that came instead. */
type Outcome = { answer: unknown } | { exception: ExceptionPayload };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('WebSocket gateways (Socket.IO)', () => {
  const redis = useRedis('redis');
  const apps: INestApplication[] = [];
  const sockets: Socket[] = [];

  async function app(options: RateLimitRootOptions = {}, logger: LogCapture | false = false) {
    const created = await createWsApp(
      { redis: redis().url, timeout: REDIS_DECIDES_MS, keyPrefix: uniquePrefix(), ...options },
      logger,
    );
    apps.push(created);
    return created;
  }

  async function client(a: INestApplication, token?: string): Promise<Socket> {
    const socket = await connect(a, token);
    sockets.push(socket);
    return socket;
  }

  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.disconnect();
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  /**
   * Sends one message and waits for whichever comes first: the acknowledgement carrying the
   * handler's answer, or the `exception` event the gateway sends instead.
   */
  function send(socket: Socket, event: string, data?: unknown): Promise<Outcome> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer to ${event}`)), 2000);
      const onException = (exception: ExceptionPayload) => {
        clearTimeout(timer);
        resolve({ exception });
      };
      socket.once('exception', onException);
      socket.emit(event, data, (answer: unknown) => {
        clearTimeout(timer);
        socket.off('exception', onException);
        resolve({ answer });
      });
    });
  }

  async function series(socket: Socket, event: string, n: number, data?: unknown) {
    const out: Outcome[] = [];
    for (let i = 0; i < n; i++) out.push(await send(socket, event, data));
    return out;
  }

  const codes = (outcomes: Outcome[]) =>
    outcomes.map((o) => ('answer' in o ? 'ok' : o.exception.statusCode));

  it('answers twice, then sends a WsException with retryAfterMs; the connection stays open and works after the wait', async () => {
    const a = await app();
    const socket = await client(a, uniqueUser());
    const outcomes = await series(socket, 'chat', 3, 'hi');

    expect(outcomes.slice(0, 2)).toEqual([{ answer: 'echo: hi' }, { answer: 'echo: hi' }]);
    const third = outcomes[2];
    if (!('exception' in third)) throw new Error('the third message was not turned away');
    expect(third.exception).toMatchObject({
      status: 'error',
      statusCode: 429,
      message: 'Too Many Requests',
      retryAfter: 1,
    });
    const wait = third.exception.retryAfterMs!;
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(1000);

    expect(socket.connected).toBe(true);
    await sleep(wait + 50);
    expect(await send(socket, 'chat', 'again')).toEqual({ answer: 'echo: again' });
    expect(socket.connected).toBe(true);
  });

  it("counts only failed messages with count: 'failures', through the interceptor", async () => {
    const a = await app();
    const socket = await client(a, uniqueUser());
    expect(await series(socket, 'guess', 4, 'right')).toEqual(Array(4).fill({ answer: 'right!' }));
    const wrong = await series(socket, 'guess', 3, 'nope');
    expect(wrong.map((o) => ('exception' in o ? o.exception.message : 'ok'))).toEqual([
      'wrong guess',
      'wrong guess',
      'Too Many Requests',
    ]);
    expect(codes(await series(socket, 'guess', 1, 'right'))).toEqual([429]);
  });

  it('keys on ws:<event> and the user from client.data.user, so users are apart', async () => {
    const keyPrefix = uniquePrefix();
    const a = await app({ keyPrefix });
    const [alice, bob] = [uniqueUser(), uniqueUser()];
    const aliceSocket = await client(a, alice);
    expect(codes(await series(aliceSocket, 'chat', 3))).toEqual(['ok', 'ok', 429]);
    // A second connection of the same user shares the count; another user has her own.
    expect(codes(await series(await client(a, alice), 'chat', 1))).toEqual([429]);
    expect(codes(await series(await client(a, bob), 'chat', 2))).toEqual(['ok', 'ok']);

    const keys = stateKeys(await redis().client().keys(`${keyPrefix}:*`)).sort();
    expect(keys).toEqual(
      [alice, bob].map((user) => `${keyPrefix}:{ws:chat|user:${user}}:0:sw:2-per-1s`).sort(),
    );
  });

  it('counts connections without a user against the handshake address', async () => {
    const keyPrefix = uniquePrefix();
    const a = await app({ keyPrefix });
    expect(codes(await series(await client(a), 'chat', 2))).toEqual(['ok', 'ok']);
    expect(codes(await series(await client(a), 'chat', 1))).toEqual([429]);
    expect(stateKeys(await redis().client().keys(`${keyPrefix}:*`))).toEqual([
      `${keyPrefix}:{ws:chat|ip:127.0.0.1}:0:sw:2-per-1s`,
    ]);
  });

  it('applies a limit on the gateway class to its handlers, honours skips, and leaves other handlers alone', async () => {
    const a = await app();
    const socket = await client(a, uniqueUser());
    expect(codes(await series(socket, 'join', 2))).toEqual(['ok', 429]);
    expect(codes(await series(socket, 'leave', 3))).toEqual(['ok', 'ok', 'ok']);
    expect(codes(await series(socket, 'ping', 5))).toEqual(['ok', 'ok', 'ok', 'ok', 'ok']);
  });

  it('uses getTracker when given, with the WebSocket context', async () => {
    const a = await app({
      getTracker: (context) => `room:${context.switchToWs().getData<{ room: string }>().room}`,
    });
    const [one, two] = [await client(a, uniqueUser()), await client(a, uniqueUser())];
    const room = uniqueUser();
    expect(codes([await send(one, 'chat', { room }), await send(two, 'chat', { room })])).toEqual([
      'ok',
      'ok',
    ]);
    expect(codes([await send(one, 'chat', { room })])).toEqual([429]);
    expect(codes([await send(two, 'chat', { room: uniqueUser() })])).toEqual(['ok']);
  });

  it("sends a 503 WsException with a wait while the store fails under onStoreError: 'deny'", async () => {
    const a = await app({ redis: undefined, store: brokenStore(), onStoreError: 'deny' });
    const [outcome] = await series(await client(a, uniqueUser()), 'chat', 1);
    if (!('exception' in outcome)) throw new Error('the message was not turned away');
    expect(outcome.exception).toMatchObject({
      status: 'error',
      statusCode: 503,
      message: 'Rate limiting is unavailable',
    });
    expect(outcome.exception.retryAfterMs).toBeGreaterThan(0);
  });

  it('does not log a rejection as an error', async () => {
    const logs = new LogCapture();
    const a = await app({}, logs);
    expect(codes(await series(await client(a, uniqueUser()), 'chat', 4))).toEqual([
      'ok',
      'ok',
      429,
      429,
    ]);
    expect(logs.entries.length).toBeGreaterThan(0);
    expect(logs.errors).toEqual([]);
  });

  it('runs skipIf, onDecision and onLimited with the WebSocket context', async () => {
    const decided: Array<[string, unknown, boolean]> = [];
    const limited: RateLimitDecision[] = [];
    const a = await app({
      skipIf: async (context) =>
        context.switchToWs().getData<{ internal?: boolean }>()?.internal === true,
      onDecision: (context, decision) =>
        decided.push([context.getType(), context.switchToWs().getPattern(), decision.allowed]),
      onLimited: (_context, decision) => limited.push(decision),
    });
    const socket = await client(a, uniqueUser());
    expect(codes(await series(socket, 'chat', 3, { internal: true }))).toEqual(['ok', 'ok', 'ok']);
    expect(codes(await series(socket, 'chat', 3, {}))).toEqual(['ok', 'ok', 429]);
    expect(decided).toEqual([
      ['ws', 'chat', true],
      ['ws', 'chat', true],
      ['ws', 'chat', false],
    ]);
    expect(limited).toHaveLength(1);
    expect(limited[0]).toMatchObject({ allowed: false, remaining: 0 });
  });
});

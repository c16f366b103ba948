/**
 * Concurrency leases outside HTTP: a GraphQL resolver, a Socket.IO handler and a TCP
 * microservice handler hold their lease while they run, and `RateLimitInterceptor` frees it when
 * the handler completes or throws. Memory store; one at a time per caller.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { firstValueFrom } from 'rxjs';
import { type Socket } from 'socket.io-client';
import request from 'supertest';
import { type RateLimitRootOptions } from '../../lib/options/rate-limit.options.js';
import { uniquePrefix } from '../contract/http/fixtures/app.js';
import { waitFor } from '../support/wait-for.js';
import {
  createLeaseGraphQLApp,
  createLeaseRpcApp,
  createLeaseWsApp,
  Gate,
  type Mode,
} from './fixtures/flow-control-apps.js';
import { connect } from './fixtures/ws-app.js';

/** What a transport hands back on an error: the wait, when the call was turned away. */
interface ErrorPayload {
  message: string;
  statusCode?: number;
  retryAfter?: number;
  extensions?: { code?: string; retryAfter?: number };
}

/** A caller of one transport's limited handler; every call comes from the same caller. */
interface Driver {
  gate: Gate;
  /** The answer, `limited, retry after <s>` when turned away, or the error's message. */
  call(mode: Mode): Promise<string>;
  close(): Promise<void>;
}

function describeError(error: ErrorPayload): string {
  const limited = error.statusCode === 429 || error.extensions?.code === 'TOO_MANY_REQUESTS';
  const retryAfter = error.retryAfter ?? error.extensions?.retryAfter;
  return limited ? `limited, retry after ${retryAfter}` : error.message;
}

async function graphql(options: RateLimitRootOptions): Promise<Driver> {
  const app = await createLeaseGraphQLApp(options);
  return {
    gate: app.get(Gate),
    async call(mode) {
      const res = await request(app.getHttpServer())
        .post('/graphql')
        .send({ query: `{ leased(mode: "${mode}") }` });
      const body = res.body as { data?: { leased?: string }; errors?: ErrorPayload[] };
      const [error] = body.errors ?? [];
      return error === undefined ? body.data!.leased! : describeError(error);
    },
    close: () => app.close(),
  };
}

/** Sends one message; resolves with the acknowledgement, or the `exception` sent instead. */
function emit(socket: Socket, mode: Mode): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer to ${mode}`)), 5000);
    const onException = (exception: ErrorPayload) => {
      clearTimeout(timer);
      resolve(describeError(exception));
    };
    socket.once('exception', onException);
    socket.emit('leased', mode, (answer: string) => {
      clearTimeout(timer);
      socket.off('exception', onException);
      resolve(answer);
    });
  });
}

async function websocket(options: RateLimitRootOptions): Promise<Driver> {
  const app = await createLeaseWsApp(options);
  // Two connections from one address, one caller: a call never waits behind another's answer.
  const sockets = [await connect(app), await connect(app)];
  let turn = 0;
  return {
    gate: app.get(Gate),
    call: (mode) => emit(sockets[turn++ % sockets.length], mode),
    async close() {
      for (const socket of sockets) socket.disconnect();
      await app.close();
    },
  };
}

async function rpc(options: RateLimitRootOptions): Promise<Driver> {
  const app = await createLeaseRpcApp(options);
  return {
    gate: app.gate,
    async call(mode) {
      try {
        return await firstValueFrom(app.client.send<string>('leased', { mode }));
      } catch (error) {
        return describeError(error as ErrorPayload);
      }
    },
    close: () => app.close(),
  };
}

/** Each transport, how to start it, and the message its throwing handler's error carries. */
const TRANSPORTS: Array<[string, (options: RateLimitRootOptions) => Promise<Driver>, string]> = [
  ['GraphQL', graphql, 'resolver broke'],
  ['WebSocket', websocket, 'handler broke'],
  ['RPC', rpc, 'handler broke'],
];

describe.each(TRANSPORTS)('concurrency leases on %s handlers', (_name, start, broke) => {
  const running: Driver[] = [];

  async function boot(): Promise<Driver> {
    const driver = await start({ keyPrefix: uniquePrefix() });
    running.push(driver);
    return driver;
  }

  afterEach(async () => {
    for (const driver of running) driver.gate.open();
    await Promise.all(running.splice(0).map((d) => d.close()));
  });

  const inHandler = (gate: Gate, n: number) => async () =>
    gate.running === n ? (true as const) : `${gate.running} in the handler`;

  it('frees the lease of a call a later guard turned away, at the first renewal instead of renewing it', async () => {
    const d = await boot();
    expect(await d.call('deny')).not.toMatch(/^done|^limited/);
    // The interceptor never ran: the lease stays taken until the keeper finds it unclaimed.
    expect(await d.call('ok')).toBe('limited, retry after 1');
    await waitFor('the unclaimed lease freed', 10_000 / 3 + 2000, async () => {
      const answer = await d.call('ok');
      return answer === 'done: ok' || answer;
    });
  }, 15_000);

  it('holds the lease while the handler runs, and frees it when the handler completes', async () => {
    const d = await boot();
    const held = d.call('hold');
    await waitFor('the held call in the handler', 2000, inHandler(d.gate, 1));
    expect(await d.call('ok')).toBe('limited, retry after 1');
    d.gate.open();
    expect(await held).toBe('done: hold');
    // One at a time: each of these would be turned away had the one before kept its lease.
    expect(await d.call('ok')).toBe('done: ok');
    expect(await d.call('ok')).toBe('done: ok');
    expect(d.gate.tags()).toEqual(['hold', 'ok', 'ok']);
  });

  it('frees the lease when the handler throws', async () => {
    const d = await boot();
    expect(await d.call('fail')).toBe(broke);
    expect(await d.call('fail')).toBe(broke);
    expect(await d.call('ok')).toBe('done: ok');
    expect(d.gate.tags()).toEqual(['fail', 'fail', 'ok']);
    // Still limited after all that: a held call turns the next one away.
    d.gate.close();
    const held = d.call('hold');
    await waitFor('the held call in the handler', 2000, inHandler(d.gate, 1));
    expect(await d.call('ok')).toBe('limited, retry after 1');
    d.gate.open();
    expect(await held).toBe('done: hold');
  });
});

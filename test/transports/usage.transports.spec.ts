/**
 * Route policies that settle usage outside HTTP: on a GraphQL resolver, a Socket.IO handler and a
 * TCP microservice handler, `RateLimitInterceptor` keeps the handler's result and the guard
 * settles what it says was used once the call has ended. Memory store and Redis.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { firstValueFrom } from 'rxjs';
import request from 'supertest';
import { RateLimitStore } from '../../lib/index.js';
import { type RateLimitRootOptions } from '../../lib/options/rate-limit.options.js';
import { uniquePrefix } from '../contract/http/fixtures/app.js';
import { STORE_KINDS, useRedis, REDIS_DECIDES_MS } from '../support/stores.js';
import { type CallTaking, watchSettles } from '../support/settles.js';
import {
  createSpendGraphQLApp,
  createSpendRpcApp,
  createSpendWsApp,
} from './fixtures/usage-apps.js';
import { connect } from './fixtures/ws-app.js';

/** A caller of one transport's `spend` handler: the answer, or `limited` when turned away. */
interface Driver {
  spend(used: number): Promise<string>;
  store: CallTaking;
  close(): Promise<void>;
}

async function graphql(options: RateLimitRootOptions): Promise<Driver> {
  const app = await createSpendGraphQLApp(options);
  return {
    async spend(used) {
      const res = await request(app.getHttpServer())
        .post('/graphql')
        .send({ query: `{ spend(used: ${used}) }` });
      const body = res.body as { data?: { spend?: number }; errors?: unknown[] };
      return body.errors === undefined ? String(body.data!.spend) : 'limited';
    },
    store: app.get<CallTaking>(RateLimitStore),
    close: () => app.close(),
  };
}

async function websocket(options: RateLimitRootOptions): Promise<Driver> {
  const app = await createSpendWsApp(options);
  const socket = await connect(app);
  return {
    spend: (used) =>
      new Promise((resolve) => {
        const onException = () => resolve('limited');
        socket.once('exception', onException);
        socket.emit('spend', used, (answer: number) => {
          socket.off('exception', onException);
          resolve(String(answer));
        });
      }),
    store: app.get<CallTaking>(RateLimitStore),
    async close() {
      socket.disconnect();
      await app.close();
    },
  };
}

async function rpc(options: RateLimitRootOptions): Promise<Driver> {
  const app = await createSpendRpcApp(options);
  return {
    async spend(used) {
      try {
        return String(await firstValueFrom(app.client.send<number>('spend', { used })));
      } catch {
        return 'limited';
      }
    },
    store: app.microservice.get<CallTaking>(RateLimitStore),
    close: () => app.close(),
  };
}

const TRANSPORTS: Array<[string, (options: RateLimitRootOptions) => Promise<Driver>]> = [
  ['GraphQL', graphql],
  ['WebSocket', websocket],
  ['RPC', rpc],
];

describe.each(STORE_KINDS)('settling usage outside HTTP, on the %s store', (kind) => {
  const redis = useRedis(kind);

  describe.each(TRANSPORTS)('on %s handlers', (_name, start) => {
    const running: Driver[] = [];
    afterEach(async () => {
      await Promise.all(running.splice(0).map((d) => d.close()));
    });

    it('charges what the result says in place of the estimate, once the call has ended', async () => {
      const driver = await start({
        keyPrefix: uniquePrefix(),
        ...(kind === 'redis' ? { redis: redis().url, timeout: REDIS_DECIDES_MS } : {}),
      });
      running.push(driver);
      const { settled } = watchSettles(driver.store);

      // Each call reserves 60 of 100: without settling, the second would be turned away.
      expect(await driver.spend(10)).toBe('10');
      await settled(1);
      expect(await driver.spend(25)).toBe('25');
      await settled(2);
      // 35 used: 60 more fit, once; then 94 are counted and no estimate of 60 fits.
      expect(await driver.spend(59)).toBe('59');
      await settled(3);
      expect(await driver.spend(1)).toBe('limited');
    });
  });
});

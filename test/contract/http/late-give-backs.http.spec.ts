/**
 * A route that counts only failures gives back a request that succeeded once its response has
 * ended, however long the call took. On the buckets, that give-back never puts back more than the
 * bucket would hold had the request never been counted: a call that held 10 tokens while the
 * bucket refilled and 10 failures took the refill frees nothing when it succeeds. Through a real
 * app on the memory store and on Redis through every client, under a test clock.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import {
  Controller,
  Get,
  type INestApplication,
  Injectable,
  Query,
  UnauthorizedException,
} from '@nestjs/common';
import request from 'supertest';
import { RateLimit, RateLimitModule, RateLimitStore } from '../../../lib/index.js';
import { type StoreCall } from '../../../lib/store-contract/store-call.js';
import { type CallTaking } from '../../support/settles.js';
import { STORE_TARGETS, TestClock, useRedis } from '../../support/stores.js';
import { waitFor } from '../../support/wait-for.js';
import { uniquePrefix, uniqueUser } from './fixtures/app.js';
import { startHttpApp, USER_HEADER } from './fixtures/http-app.js';

/** Holds the calls made with `?hold=1` until released. */
@Injectable()
class Gate {
  held = 0;
  release!: () => void;
  readonly opened = new Promise<void>((resolve) => (this.release = resolve));
}

type Query = { cost?: string; hold?: string; fail?: string };
const costOf = (ctx: { switchToHttp(): { getRequest<T>(): T } }) =>
  Number(ctx.switchToHttp().getRequest<{ query: Query }>().query.cost ?? 1);
/** 10 per second, 10 at once; only failures count. */
const ROUTE = { period: '1s', threshold: 10, count: 'failures', cost: costOf } as const;

@Controller('late')
class LateController {
  constructor(private readonly gate: Gate) {}

  @RateLimit({ ...ROUTE, algorithm: 'token-bucket' })
  @Get('token-bucket')
  tokens(@Query() query: Query) {
    return this.answer(query);
  }

  @RateLimit({ ...ROUTE, algorithm: 'leaky-bucket' })
  @Get('leaky-bucket')
  leaky(@Query() query: Query) {
    return this.answer(query);
  }

  private async answer({ hold, fail }: Query) {
    if (hold) {
      this.gate.held++;
      await this.gate.opened;
    }
    if (fail) throw new UnauthorizedException();
    return 'ok';
  }
}

describe.each(STORE_TARGETS)('late give-backs on routes counting failures, on %s', (target) => {
  const redis = useRedis(target === 'memory' ? 'memory' : 'redis');
  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  it.each(['token-bucket', 'leaky-bucket'])(
    '%s: a call holding 10 tokens while the bucket refilled and 10 failures took the refill frees nothing when it succeeds (10 allowed, not 20)',
    async (algorithm) => {
      const clock = new TestClock();
      const client = target === 'memory' ? undefined : await redis().connect(target);
      const app = await startHttpApp({
        imports: [
          RateLimitModule.forRoot({
            keyPrefix: uniquePrefix(),
            clock: clock.now,
            ...(client === undefined ? {} : { redis: client }),
          }),
        ],
        controllers: [LateController],
        providers: [Gate],
      });
      apps.push(app);
      const gate = app.get(Gate);
      const refunds = watchRefunds(app.get<CallTaking>(RateLimitStore));
      const user = uniqueUser();
      const call = (query: string) =>
        request(app.getHttpServer()).get(`/late/${algorithm}?${query}`).set(USER_HEADER, user);
      const allowedOf = async (count: number) => {
        let allowed = 0;
        for (let i = 0; i < count; i++) if ((await call('fail=1')).status !== 429) allowed++;
        return allowed;
      };

      // The slow call takes all 10 and waits; the bucket is full again 2.1 s later.
      const slow = call('cost=10&hold=1').then((r) => r.status);
      await waitFor('the slow call to start', 5000, () =>
        Promise.resolve(gate.held === 1 || 'not yet'),
      );
      clock.advance(2_100);
      const first = await allowedOf(20);
      gate.release();
      expect(await slow).toBe(200);
      // It succeeded, so it does not count: its 10 are given back, where the bucket allows.
      await refunds.done(1);
      const second = await allowedOf(20);
      expect([first, second]).toEqual([10, 0]);
    },
  );
});

/** Follows the refund calls made on the app's store, to wait for them once a response has ended. */
function watchRefunds(store: CallTaking): { done(count: number): Promise<void> } {
  const execute = store.execute.bind(store);
  const refunds: Promise<unknown>[] = [];
  store.execute = (call: StoreCall) => {
    const done = execute(call);
    if (call.op === 'refund') refunds.push(done);
    return done;
  };
  return {
    async done(count) {
      await waitFor(`${count} refunds`, 5000, () =>
        Promise.resolve(refunds.length >= count || `${refunds.length} so far`),
      );
      await Promise.all(refunds);
    },
  };
}

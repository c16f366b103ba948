/**
 * The login recipe under concurrent attempts: a route that counts only failures, five in 15
 * minutes, then a 15-minute lock-out. Every attempt counts while its outcome is unknown, so no more
 * than five are ever in flight; one that finds the limit full only because of attempts still in
 * flight waits for their outcomes instead of being refused, and starts no lock-out. Concurrent
 * right passwords all get in; concurrent wrong ones get exactly five 401s, then the lock-out.
 * Through real Express and Fastify apps, on the memory store and on Redis through every client,
 * and across two instances sharing one Redis, under a test clock that only the test moves.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import {
  Body,
  Controller,
  HttpCode,
  type INestApplication,
  Injectable,
  Post,
  UnauthorizedException,
} from '@nestjs/common';
import request from 'supertest';
import { RateLimit, RateLimitModule, RateLimitStore } from '../../../lib/index.js';
import { type StoreCall } from '../../../lib/store-contract/store-call.js';
import { type ClientKind } from '../../support/clients.js';
import { type CallTaking } from '../../support/settles.js';
import { STORE_TARGETS, TestClock, useRedis } from '../../support/stores.js';
import { uniquePrefix, uniqueUser } from './fixtures/app.js';
import { HTTP_ADAPTERS, type HttpAdapterKind, startHttpApp } from './fixtures/http-app.js';

/**
 * Holds the attempts that got in until every attempt of the burst has been decided once: five
 * are then in flight, and every other one met a limit full of attempts whose outcome was unknown.
 */
@Injectable()
class Gate {
  /** How many attempts the current burst makes; the gate opens once each was decided. */
  expected = 0;
  private decided = 0;
  private open!: () => void;
  private readonly opened = new Promise<void>((resolve) => (this.open = resolve));

  pass(): Promise<void> {
    return this.opened;
  }

  /** Follows the decisions (consumes and reservations) made on an app's store. */
  watch(store: CallTaking): void {
    const execute = store.execute.bind(store);
    store.execute = (call: StoreCall) => {
      const done = execute(call);
      if (call.op === 'consume' || call.op === 'reserve') {
        void done.finally(() => {
          if (++this.decided >= this.expected) this.open();
        });
      }
      return done;
    };
  }
}

interface Credentials {
  username?: string;
  password?: string;
}

const username = (ctx: { switchToHttp(): { getRequest<T>(): T } }) =>
  ctx.switchToHttp().getRequest<{ body?: Credentials }>().body?.username;

const PER_ACCOUNT = {
  period: '15m',
  threshold: 5,
  count: 'failures',
  blockDuration: '15m',
  tracker: username,
} as const;

@Controller('auth')
class AuthController {
  constructor(private readonly gate: Gate) {}

  /**
   * The recipe's route, held at the gate in the first burst; its waits for outcomes are bounded
   * by `maxWait`, so that a busy machine cannot make them run out.
   */
  @RateLimit({ ...PER_ACCOUNT, maxWait: '1m' })
  @Post('login')
  @HttpCode(200)
  async login(@Body() { password }: Credentials) {
    await this.gate.pass();
    if (password !== 'open-sesame') throw new UnauthorizedException();
    return 'welcome';
  }

  /** The recipe's route as it is, with the default bound on waiting for outcomes. */
  @RateLimit(PER_ACCOUNT)
  @Post('quick-login')
  @HttpCode(200)
  quickLogin(@Body() { password }: Credentials) {
    if (password !== 'open-sesame') throw new UnauthorizedException();
    return 'welcome';
  }
}

const RIGHT = 'open-sesame';
const WRONG = 'guess';

/** How many responses had each status, e.g. `{ 200: 8 }`. */
function tally(statuses: readonly number[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const s of statuses) counts[s] = (counts[s] ?? 0) + 1;
  return counts;
}

describe.each(STORE_TARGETS)('concurrent logins on a route counting failures, on %s', (target) => {
  const redis = useRedis(target === 'memory' ? 'memory' : 'redis');
  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  /** Instances of one app sharing the store (Redis) and one gate, under one test clock. */
  async function start(adapter: HttpAdapterKind, instances = 1) {
    const clock = new TestClock();
    const gate = new Gate();
    const keyPrefix = uniquePrefix();
    const started: INestApplication[] = [];
    for (let i = 0; i < instances; i++) {
      const client = target === 'memory' ? undefined : await redis().connect(target as ClientKind);
      const app = await startHttpApp(
        {
          imports: [
            RateLimitModule.forRoot({
              keyPrefix,
              clock: clock.now,
              // 5 s: every decision is Redis's. On a busy machine one past the 100 ms default
              // is the fallback's, which counts on this instance alone.
              ...(client === undefined ? {} : { redis: client, timeout: 5000 }),
            }),
          ],
          controllers: [AuthController],
          providers: [{ provide: Gate, useValue: gate }],
        },
        { adapter },
      );
      apps.push(app);
      started.push(app);
      gate.watch(app.get<CallTaking>(RateLimitStore));
    }
    const user = uniqueUser();
    const login = (password: string, path = 'login', n = 0) =>
      request(started[n % started.length].getHttpServer())
        .post(`/auth/${path}`)
        .send({ username: user, password });
    /** `passwords` at once, spread over the instances; their statuses in the same order. */
    const burst = async (passwords: readonly string[], path = 'login') => {
      gate.expected = passwords.length;
      return (await Promise.all(passwords.map((p, n) => login(p, path, n)))).map((r) => r.status);
    };
    return { clock, login, burst };
  }

  describe.each(HTTP_ADAPTERS)('on %s', (adapter) => {
    it('8 right passwords at once all get in, and so does the next: nothing is locked out', async () => {
      const { burst, login } = await start(adapter);
      expect(tally(await burst(Array(8).fill(RIGHT)))).toEqual({ 200: 8 });
      expect((await login(RIGHT)).status).toBe(200);
    });

    it('8 right passwords at once all get in on the route as the recipe has it', async () => {
      const { burst, login } = await start(adapter);
      expect(tally(await burst(Array(8).fill(RIGHT), 'quick-login'))).toEqual({ 200: 8 });
      expect((await login(RIGHT, 'quick-login')).status).toBe(200);
    });

    it('20 wrong passwords at once: exactly five 401s, the rest 429, and the lock-out stands from then', async () => {
      const { burst, login, clock } = await start(adapter);
      expect(tally(await burst(Array(20).fill(WRONG)))).toEqual({ 401: 5, 429: 15 });
      // Booked during the burst: a minute later, 14 minutes of it are left, even for the right password.
      clock.advance(60_000);
      const after = await login(RIGHT);
      expect(after.status).toBe(429);
      expect(after.headers['retry-after']).toBe('840');
    });

    it('4 wrong and 6 right at once: every one is answered by its password, and 4 failures are counted', async () => {
      const { burst, login } = await start(adapter);
      const passwords = [WRONG, RIGHT, RIGHT, WRONG, RIGHT, WRONG, RIGHT, RIGHT, WRONG, RIGHT];
      const statuses = await burst(passwords);
      expect(statuses).toEqual(passwords.map((p) => (p === RIGHT ? 200 : 401)));
      // The fifth failure fills the limit; only the next attempt is turned away, and locked out.
      expect((await login(WRONG)).status).toBe(401);
      const locked = await login(RIGHT);
      expect(locked.status).toBe(429);
      expect(locked.headers['retry-after']).toBe('900');
    });

    if (target !== 'memory') {
      it('two instances sharing Redis: 8 right passwords all get in; then 20 wrong get five 401s between them', async () => {
        const { burst, login, clock } = await start(adapter, 2);
        expect(tally(await burst(Array(8).fill(RIGHT)))).toEqual({ 200: 8 });
        expect((await login(RIGHT, 'login', 1)).status).toBe(200);
        expect(tally(await burst(Array(20).fill(WRONG)))).toEqual({ 401: 5, 429: 15 });
        clock.advance(60_000);
        const after = await login(RIGHT, 'login', 1);
        expect(after.status).toBe(429);
        expect(after.headers['retry-after']).toBe('840');
      });
    }
  });
});

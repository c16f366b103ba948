/**
 * A concurrency lease held by a process that dies without a word (SIGKILL) frees itself once its
 * period has passed since the last renewal; while the process lives, its renewals keep the lease
 * past its period. The holder is a separate Node process running the built library.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { RateLimitModule, type RateLimitPolicy, RateLimitService } from '../../lib/index.js';
import { testServer } from '../support/redis-process.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';

// One build per project: the redis and valkey projects may run this file at the same time.
const BUILD = `dist-test/lease-crash-${testServer().name}`;
const POLICY: RateLimitPolicy = { algorithm: 'concurrency', threshold: 1, period: '1s' };
const PREFIX = `crash-${randomUUID().slice(0, 8)}`;

// The holder: takes the lease, says so, and keeps running (renewing) until it is killed.
const HOLDER = `
import { NestFactory } from '@nestjs/core';
import { RateLimitModule, RateLimitService } from './index.js';
const [url, prefix, key, policy] = process.argv.slice(2);
const app = await NestFactory.createApplicationContext(
  RateLimitModule.forRoot({ redis: url, keyPrefix: prefix }), { logger: false });
await app.get(RateLimitService).acquire(key, JSON.parse(policy));
process.stdout.write('held\\n');
setInterval(() => {}, 1000);
`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a lease whose holder is killed', () => {
  let redis: TestRedis;
  let app: INestApplication;
  let holder: ChildProcess | undefined;

  beforeAll(async () => {
    const run = promisify(execFile);
    await run('npx', ['tsc', '-p', 'tsconfig.build.json', '--outDir', BUILD]);
    await run('node', ['scripts/copy-lua.js', `${BUILD}/algorithms`]);
    writeFileSync(`${BUILD}/holder.mjs`, HOLDER);
    redis = await startRedis();
    const ref = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ redis: redis.url, keyPrefix: PREFIX })],
    }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.init();
  }, 120_000);

  afterAll(async () => {
    holder?.kill('SIGKILL');
    await app?.close();
    await redis?.stop();
  });

  it('is kept while the holder runs, and frees itself a period after the holder dies', async () => {
    const limiter = app.get(RateLimitService);
    const key = `report:${randomUUID()}`;
    holder = spawn(
      'node',
      [`${BUILD}/holder.mjs`, redis.url, PREFIX, key, JSON.stringify(POLICY)],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    await new Promise<void>((resolve, reject) => {
      holder!.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('held') && resolve());
      holder!.once('exit', (code) => reject(new Error(`the holder exited early (${code})`)));
    });
    const free = () =>
      limiter.acquire(key, POLICY, { maxWait: 0 }).then(
        (p) => (void p.release(), true),
        () => false,
      );

    // Three periods later, the living holder's renewals still keep it.
    for (let i = 0; i < 6; i++) {
      await sleep(500);
      expect(await free()).toBe(false);
    }

    holder.kill('SIGKILL');
    const killedAt = performance.now();
    while (!(await free())) {
      expect(performance.now() - killedAt).toBeLessThan(1000 + 500);
      await sleep(20);
    }
    const freedAfterMs = performance.now() - killedAt;
    // Renewed at most a third of a period before the kill: it cannot have expired much sooner.
    expect(freedAfterMs).toBeGreaterThan(1000 * (2 / 3) - 50);
  }, 30_000);
});

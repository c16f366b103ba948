/** A flooding client over HTTP: the block cache answers it locally and the responses do not change. */
import { afterEach, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { Redis } from 'ioredis';
import request from 'supertest';
import { createApp, HTTP_ADAPTERS, uniquePrefix, uniqueUser, USER_HEADER } from './fixtures/app.js';
import { TestClock, useRedis } from '../../support/stores.js';
import { OVERRIDES_SCRIPT } from '../../../lib/overrides/redis-override-source.js';

/**
 * Counts the decisions a real client sends, one FCALL (or EVALSHA) each, whatever else shares the
 * server or the client.
 */
function countScripts(client: Redis): () => number {
  let calls = 0;
  const send = client.sendCommand.bind(client);
  client.sendCommand = ((command: { name: string; args: unknown[] }) => {
    // The module reads its limit overrides with a script of its own too: not a decision.
    const overrides = command.args[0] === OVERRIDES_SCRIPT.sha;
    if ((command.name === 'fcall' || command.name === 'evalsha') && !overrides) calls++;
    return send(command as never);
  }) as Redis['sendCommand'];
  return () => calls;
}

describe.each(HTTP_ADAPTERS)('block cache over HTTP on %s', (adapter) => {
  const redis = useRedis('redis');
  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  async function flood(blockCache: boolean) {
    const clock = new TestClock();
    const client = new Redis(redis().url);
    const scripts = countScripts(client);
    const app = await createApp(
      { redis: client, keyPrefix: uniquePrefix(), clock: clock.now, blockCache },
      { adapter },
    );
    apps.push(app);
    // Another client's request first: the first decision on a server also loads the script.
    await request(app.getHttpServer()).get('/hello/sayHi').set(USER_HEADER, uniqueUser());
    const before = scripts();
    const user = uniqueUser();
    const seen = [];
    // 40 requests at one instant against 2 per 30 s, then one after the wait.
    for (let i = 0; i < 40; i++) {
      const res = await request(app.getHttpServer()).get('/hello/sayHi').set(USER_HEADER, user);
      seen.push([res.status, res.headers['retry-after'], res.headers['ratelimit']]);
    }
    clock.advance(30_000);
    const after = await request(app.getHttpServer()).get('/hello/sayHi').set(USER_HEADER, user);
    seen.push([after.status, after.headers['retry-after'], after.headers['ratelimit']]);
    const calls = scripts() - before;
    client.disconnect();
    return { seen, calls };
  }

  it('sends one script per retry window for a flooding client, with the very same responses', async () => {
    const cached = await flood(true);
    const uncached = await flood(false);

    expect(cached.seen).toEqual(uncached.seen);
    expect(cached.seen.map(([status]) => status)).toEqual([200, 200, ...Array(38).fill(429), 200]);
    expect(cached.seen[2]).toEqual([429, '30', '"2-per-30s";r=0;t=30']);
    // Two allowed, the first rejection, and the request after the wait reach Redis.
    expect(cached.calls).toBe(4);
    expect(uncached.calls).toBe(41);
  });
});

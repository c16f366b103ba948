/**
 * Each Jest project runs on the server it names: the redis project on redis-server, the valkey
 * project on valkey-server. Without this, a lookup that fell back to redis-server would pass the
 * valkey project on the wrong server.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { testServer } from '../../support/redis-process.js';
import { startRedis, type TestRedis } from '../../support/redis-server.js';

describe('the server this project runs on', () => {
  let redis: TestRedis;
  beforeAll(async () => void (redis = await startRedis()));
  afterAll(() => redis?.stop());

  it('is the one the project names', async () => {
    const info = await redis.shared.info('server');
    const valkey = /^valkey_version:/m.test(info);
    expect(valkey ? 'valkey' : 'redis').toBe(testServer().name);
  });
});

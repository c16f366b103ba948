/**
 * A defect of the source articles (../shared/seeds/README.md) that only a route shows: a limit
 * keyed on the raw URI, which a client escapes by changing an id in the path ("seed 004" is 004_…).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import request from 'supertest';
import { STORE_KINDS, useRedis } from '../../support/stores.js';
import { createApp, uniquePrefix, uniqueUser, USER_HEADER } from './fixtures/app.js';

describe.each(STORE_KINDS)('keys by route, not raw URI, on the %s store (seed 004)', (kind) => {
  const redis = useRedis(kind);
  let app: INestApplication;

  beforeAll(async () => {
    app = await createApp({
      keyPrefix: uniquePrefix(),
      ...(kind === 'redis' ? { redis: redis().url } : {}),
    });
  });
  afterAll(async () => {
    await app.close();
  });

  it('/items/1, /items/2, … share one limit, so changing the id does not bypass it', async () => {
    const user = uniqueUser();
    const codes = [];
    for (let id = 1; id <= 6; id++) {
      codes.push(
        (await request(app.getHttpServer()).get(`/items/${id}`).set(USER_HEADER, user)).status,
      );
    }
    expect(codes).toEqual([200, 200, 200, 429, 429, 429]);
    const withQuery = await request(app.getHttpServer()).get('/items/7?x=1').set(USER_HEADER, user);
    expect(withQuery.status).toBe(429);
  });
});

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { AppModule } from '../../sample/app.module.js';

describe('the sample app', () => {
  let app: INestApplication;
  const saved = process.env.REDIS_URL;

  beforeAll(async () => {
    delete process.env.REDIS_URL;
    const ref = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
  });
  afterAll(async () => {
    await app.close();
    if (saved !== undefined) process.env.REDIS_URL = saved;
  });

  it('answers the third quick GET /hello/sayHi with 429 and Retry-After', async () => {
    const server = app.getHttpServer();
    const codes = [];
    for (let i = 0; i < 2; i++) codes.push((await request(server).get('/hello/sayHi')).status);
    const third = await request(server).get('/hello/sayHi');
    expect([...codes, third.status]).toEqual([200, 200, 429]);
    expect(Number(third.headers['retry-after'])).toBeGreaterThanOrEqual(29);
  });

  it('limits /items/:id as one route and leaves /items/health alone', async () => {
    const server = app.getHttpServer();
    const codes = [];
    for (let id = 1; id <= 11; id++) codes.push((await request(server).get(`/items/${id}`)).status);
    expect(codes.slice(0, 10).every((c) => c === 200)).toBe(true);
    expect(codes[10]).toBe(429);
    for (let i = 0; i < 15; i++)
      expect((await request(server).get('/items/health')).status).toBe(200);
  });

  it('counts those decisions on /metrics through onDecision, without limiting /metrics itself', async () => {
    const res = await request(app.getHttpServer()).get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    const count = (handler: string, outcome: string) =>
      new RegExp(
        `^rate_limit_decisions_total\\{handler="${handler}",outcome="${outcome}"\\} (\\d+)$`,
        'm',
      ).exec(res.text)?.[1];
    expect(count('HelloController.sayHi', 'allowed')).toBe('2');
    expect(count('HelloController.sayHi', 'limited')).toBe('1');
    expect(count('ItemsController.findOne', 'allowed')).toBe('10');
    expect(count('ItemsController.findOne', 'limited')).toBe('1');
    expect(res.text).not.toMatch(/MetricsController/);
  });
});

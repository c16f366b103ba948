/** `@RateLimit` on GraphQL resolvers: Apollo on Express, a real app, queries over HTTP. */
import { afterEach, describe, expect, it } from '@jest/globals';
import { getApolloServer } from '@nestjs/apollo';
import { type INestApplication } from '@nestjs/common';
import { GqlExecutionContext } from '@nestjs/graphql';
import request from 'supertest';
import { type RateLimitDecision } from '../../lib/index.js';
import { type RateLimitRootOptions } from '../../lib/options/rate-limit.options.js';
import { uniquePrefix, uniqueUser, USER_HEADER } from '../contract/http/fixtures/app.js';
import { useRedis, REDIS_DECIDES_MS } from '../support/stores.js';
import { brokenStore } from './fixtures/broken-store.js';
import { createGraphQLApp } from './fixtures/graphql-app.js';
import { LogCapture } from './fixtures/log-capture.js';
import { stateKeys } from '../support/decision-ids.js';

interface GraphQLErrorBody {
  message: string;
  path?: string[];
  extensions?: Record<string, unknown>;
}
interface GraphQLBody {
  data?: Record<string, unknown> | null;
  errors?: GraphQLErrorBody[];
}

describe('GraphQL resolvers (Apollo on Express)', () => {
  const redis = useRedis('redis');
  const apps: INestApplication[] = [];

  async function app(
    options: RateLimitRootOptions = {},
    { passResponse = false, logger = false as LogCapture | false } = {},
  ) {
    const created = await createGraphQLApp(
      { redis: redis().url, timeout: REDIS_DECIDES_MS, keyPrefix: uniquePrefix(), ...options },
      { passResponse, logger },
    );
    apps.push(created);
    return created;
  }

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  function query(a: INestApplication, text: string, user?: string) {
    const req = request(a.getHttpServer()).post('/graphql');
    if (user !== undefined) req.set(USER_HEADER, user);
    return req.send({ query: text });
  }

  async function series(a: INestApplication, text: string, n: number, user?: string) {
    const out = [];
    for (let i = 0; i < n; i++) out.push(await query(a, text, user));
    return out;
  }

  /** Per response: the field's data, or the code of the error on it. */
  const outcomes = (responses: request.Response[], field: string) =>
    responses.map((res) => {
      const body = res.body as GraphQLBody;
      const error = body.errors?.find((e) => e.path?.[0] === field);
      return error ? error.extensions?.code : body.data?.[field] === undefined ? 'none' : 'ok';
    });

  it('answers Query.books twice, then a TOO_MANY_REQUESTS error with retryAfter, in HTTP 200', async () => {
    const a = await app();
    const user = uniqueUser();
    const responses = await series(a, '{ books { title } }', 3, user);

    expect(responses.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(outcomes(responses, 'books')).toEqual(['ok', 'ok', 'TOO_MANY_REQUESTS']);
    expect(responses[0].body.data.books).toEqual([{ title: 'Dune' }, { title: 'Emma' }]);
    const [error] = (responses[2].body as GraphQLBody).errors!;
    expect(error).toMatchObject({ message: 'Too Many Requests', path: ['books'] });
    const { retryAfter, retryAfterMs } = error.extensions as Record<string, number>;
    expect(retryAfter).toBeGreaterThanOrEqual(29);
    expect(retryAfter).toBeLessThanOrEqual(30);
    expect(retryAfterMs).toBeGreaterThan(28_000);
    expect(retryAfterMs).toBeLessThanOrEqual(30_000);
    expect(retryAfter).toBe(Math.ceil(retryAfterMs / 1000));
  });

  it("counts only failed resolutions with count: 'failures', through the interceptor", async () => {
    const a = await app();
    const user = uniqueUser();
    const right = await series(a, '{ verify(code: "right") }', 4, user);
    expect(right.map((r) => r.body.data.verify)).toEqual(Array(4).fill('verified'));
    const wrong = await series(a, '{ verify(code: "nope") }', 3, user);
    expect(wrong.map((r) => (r.body as GraphQLBody).errors?.[0]?.message)).toEqual([
      'wrong code',
      'wrong code',
      'Too Many Requests',
    ]);
    expect(outcomes(await series(a, '{ verify(code: "right") }', 1, user), 'verify')).toEqual([
      'TOO_MANY_REQUESTS',
    ]);
  });

  it('sets the rate-limit headers on the HTTP response, found through req.res by default', async () => {
    const a = await app();
    const user = uniqueUser();
    const [first, , third] = await series(a, '{ books { title } }', 3, user);
    expect(first.headers['ratelimit-policy']).toBe('"2-per-30s";q=2;w=30');
    expect(first.headers['ratelimit']).toMatch(/^"2-per-30s";r=1;t=(29|30)$/);
    expect(first.headers['retry-after']).toBeUndefined();
    expect(third.headers['ratelimit']).toMatch(/^"2-per-30s";r=0;t=(29|30)$/);
    expect(['29', '30']).toContain(third.headers['retry-after']);
  });

  it("sets them when the app's own context function passes res, and none on fields without a limit", async () => {
    const a = await app({ headers: 'legacy' }, { passResponse: true });
    const user = uniqueUser();
    const limited = await query(a, '{ books { title } }', user);
    expect(limited.headers['x-ratelimit-limit']).toBe('2');
    expect(limited.headers['x-ratelimit-remaining']).toBe('1');
    const open = await query(a, '{ open }', user);
    expect(open.body).toEqual({ data: { open: 'open' } });
    expect(open.headers['x-ratelimit-limit']).toBeUndefined();
  });

  it('keys on <type>.<field> and the user: Query.books and Mutation.addBook', async () => {
    const keyPrefix = uniquePrefix();
    const a = await app({ keyPrefix });
    const user = uniqueUser();
    await query(a, '{ books { title } }', user);
    const added = await series(a, 'mutation { addBook { title } }', 2, user);
    expect(outcomes(added, 'addBook')).toEqual(['ok', 'TOO_MANY_REQUESTS']);

    const keys = stateKeys(await redis().client().keys(`${keyPrefix}:*`)).sort();
    expect(keys).toEqual([
      `${keyPrefix}:{Mutation.addBook|user:${user}}:0:sw:1-per-1m`,
      `${keyPrefix}:{Query.books|user:${user}}:0:sw:2-per-30s`,
    ]);
  });

  it('counts every resolution: three aliases of one field in one operation get two answers', async () => {
    const a = await app();
    const res = await query(
      a,
      '{ a: books { title } b: books { title } c: books { title } }',
      uniqueUser(),
    );
    const body = res.body as GraphQLBody;
    expect(body.data).toMatchObject({ a: [{ title: 'Dune' }, { title: 'Emma' }], c: null });
    expect(body.data?.b).toEqual(body.data?.a);
    expect(body.errors?.map((e) => [e.path, e.extensions?.code])).toEqual([
      [['c'], 'TOO_MANY_REQUESTS'],
    ]);
  });

  it('applies a limit on the resolver class to each field, lets a method limit replace it, and honours skips', async () => {
    const a = await app();
    const user = uniqueUser();
    expect(outcomes(await series(a, '{ author }', 3, user), 'author')).toEqual([
      'ok',
      'ok',
      'TOO_MANY_REQUESTS',
    ]);
    expect(outcomes(await series(a, '{ publisher }', 3, user), 'publisher')).toEqual([
      'ok',
      'ok',
      'TOO_MANY_REQUESTS',
    ]);
    expect(outcomes(await series(a, '{ editor }', 5, user), 'editor')).toEqual([
      'ok',
      'ok',
      'ok',
      'ok',
      'TOO_MANY_REQUESTS',
    ]);
    expect(outcomes(await series(a, '{ genre }', 6, user), 'genre')).toEqual(Array(6).fill('ok'));
  });

  it('keeps users apart, and counts requests without a user against the client IP', async () => {
    const a = await app();
    const [alice, bob] = [uniqueUser(), uniqueUser()];
    const text = '{ books { title } }';
    expect(outcomes(await series(a, text, 3, alice), 'books')).toEqual([
      'ok',
      'ok',
      'TOO_MANY_REQUESTS',
    ]);
    expect(outcomes(await series(a, text, 1, bob), 'books')).toEqual(['ok']);
    expect(outcomes(await series(a, text, 3), 'books')).toEqual(['ok', 'ok', 'TOO_MANY_REQUESTS']);
  });

  it('works without any HTTP response: an operation run in process, with a user in the context', async () => {
    const a = await app();
    const server = getApolloServer(a);
    const user = uniqueUser();
    const run = () =>
      server.executeOperation(
        { query: '{ books { title } }' },
        { contextValue: { user: { id: user } } },
      );
    const results = [];
    for (let i = 0; i < 3; i++) {
      const { body } = await run();
      if (body.kind !== 'single') throw new Error('expected a single result');
      results.push(body.singleResult);
    }
    expect(results.map((r) => r.errors?.[0]?.extensions?.code ?? 'ok')).toEqual([
      'ok',
      'ok',
      'TOO_MANY_REQUESTS',
    ]);
    // The same user over HTTP shares the count: the context's user is the tracker.
    expect(outcomes([await query(a, '{ books { title } }', user)], 'books')).toEqual([
      'TOO_MANY_REQUESTS',
    ]);
  });

  it("answers SERVICE_UNAVAILABLE with a wait while the store fails under onStoreError: 'deny'", async () => {
    const a = await app({ redis: undefined, store: brokenStore(), onStoreError: 'deny' });
    const res = await query(a, '{ books { title } }', uniqueUser());
    const [error] = (res.body as GraphQLBody).errors!;
    expect(error).toMatchObject({
      message: 'Rate limiting is unavailable',
      extensions: { code: 'SERVICE_UNAVAILABLE' },
    });
    expect(error.extensions?.retryAfterMs).toBeGreaterThan(0);
    expect(res.headers['retry-after']).toBe(String(error.extensions?.retryAfter));
  });

  it('does not log a rejection as an application error', async () => {
    const logs = new LogCapture();
    const a = await app({}, { logger: logs });
    const responses = await series(a, '{ books { title } }', 4, uniqueUser());
    expect(outcomes(responses, 'books')).toEqual([
      'ok',
      'ok',
      'TOO_MANY_REQUESTS',
      'TOO_MANY_REQUESTS',
    ]);
    expect(logs.entries.length).toBeGreaterThan(0);
    expect(logs.errors).toEqual([]);
  });

  it('warns once per field about an Authorization header that arrives without a user', async () => {
    const logs = new LogCapture();
    const a = await app({}, { logger: logs });
    const warnings = () =>
      logs.entries.filter((e) => e.level === 'warn' && e.context === 'RateLimit');
    const withToken = () =>
      request(a.getHttpServer()).post('/graphql').set('Authorization', 'Bearer alice');
    // Authenticated before the guard (the middleware sets req.user): nothing to say.
    await withToken().set(USER_HEADER, uniqueUser()).send({ query: '{ books { title } }' });
    expect(warnings()).toEqual([]);
    for (let i = 0; i < 3; i++) await withToken().send({ query: '{ books { title } }' });
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0].message).toMatch(/^Query\.books \(BookResolver\.books\) got a request/);
  });

  it('warns once per app about a forwarded request the app does not trust proxies for', async () => {
    const logs = new LogCapture();
    const a = await app({}, { logger: logs });
    const warnings = () =>
      logs.entries.filter((e) => e.level === 'warn' && e.context === 'RateLimit');
    const forwarded = (client: string) =>
      request(a.getHttpServer()).post('/graphql').set('X-Forwarded-For', client);
    // Counted by the user, not the address: nothing to say.
    await forwarded('203.0.113.1')
      .set(USER_HEADER, uniqueUser())
      .send({ query: '{ books { title } }' });
    expect(warnings()).toEqual([]);
    for (const client of ['203.0.113.1', '203.0.113.2', '203.0.113.3']) {
      await forwarded(client).send({ query: '{ books { title } author }' });
    }
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0].message).toContain("app.set('trust proxy', 1)");
  });

  it('runs skipIf, onDecision and onLimited with the GraphQL context', async () => {
    const decided: Array<[string, string, boolean]> = [];
    const limited: RateLimitDecision[] = [];
    const a = await app({
      skipIf: (context) =>
        GqlExecutionContext.create(context).getContext<{
          req: { headers: Record<string, string> };
        }>().req.headers['x-internal'] === 'yes',
      onDecision: (context, decision) =>
        decided.push([
          context.getType(),
          GqlExecutionContext.create(context).getInfo<{ fieldName: string }>().fieldName,
          decision.allowed,
        ]),
      onLimited: (_context, decision) => limited.push(decision),
    });
    const user = uniqueUser();
    const internal = await request(a.getHttpServer())
      .post('/graphql')
      .set(USER_HEADER, user)
      .set('x-internal', 'yes')
      .send({ query: '{ books { title } }' });
    expect(outcomes([internal], 'books')).toEqual(['ok']);
    expect(outcomes(await series(a, '{ books { title } }', 3, user), 'books')).toEqual([
      'ok',
      'ok',
      'TOO_MANY_REQUESTS',
    ]);
    expect(decided).toEqual([
      ['graphql', 'books', true],
      ['graphql', 'books', true],
      ['graphql', 'books', false],
    ]);
    expect(limited).toHaveLength(1);
    expect(limited[0]).toMatchObject({ allowed: false, remaining: 0 });
  });
});

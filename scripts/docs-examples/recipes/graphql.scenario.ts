// GraphQL with Apollo, on Express only (the page says so: Apollo's Fastify integration is not
// among the project's dependencies): two `books` queries, then the field resolves to a
// TOO_MANY_REQUESTS error under HTTP 200.
import { Module } from '@nestjs/common';
import { BooksResolver } from './graphql.js';
import { AppModule } from './graphql-module.js';
import { assert, type HttpScenario } from './support.js';

@Module({ imports: [AppModule], providers: [BooksResolver] })
class BooksApp {}

interface GraphQLReply {
  data: { books: unknown[] | null };
  errors?: { message: string; path: string[]; extensions: { code: string; retryAfter?: number } }[];
}

export const scenario: HttpScenario = {
  kind: 'http',
  adapters: ['express'],
  module: BooksApp,
  async run(http) {
    const books = () => http.post('/graphql', { query: '{ books { title } }' });
    for (let i = 0; i < 2; i++) {
      const reply = await books();
      assert.equal(reply.status, 200);
      assert.deepEqual(reply.body, { data: { books: [] } });
      assert.match(reply.headers.get('ratelimit') ?? '', /;r=\d+/, 'headers on the HTTP response');
    }
    const third = await books();
    assert.equal(third.status, 200, 'GraphQL clients expect 200');
    const body = third.body as GraphQLReply;
    assert.equal(body.data.books, null);
    assert.equal(body.errors?.[0].extensions.code, 'TOO_MANY_REQUESTS');
    assert.deepEqual(body.errors?.[0].path, ['books']);
    assert.ok((body.errors?.[0].extensions.retryAfter ?? 0) > 0);
  },
};

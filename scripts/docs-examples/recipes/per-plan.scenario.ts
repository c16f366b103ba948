// Per-plan limits, one budget across the API: a free user gets 60 requests over /api/things,
// /api/other and /search together; a pro user, set by middleware, gets 600.
import { type MiddlewareConsumer, Module, type NestModule } from '@nestjs/common';
import { RateLimitModule } from 'nest-rate-limit';
import { ApiController, SearchController } from './per-plan.js';
import { assert, authenticate, type HttpScenario, statuses } from './support.js';

@Module({
  imports: [RateLimitModule.forRoot()],
  controllers: [ApiController, SearchController],
})
class PlansApp implements NestModule {
  configure(consumer: MiddlewareConsumer) {
    consumer.apply(authenticate).forRoutes(ApiController, SearchController);
  }
}

const ROUTES = ['/api/things', '/api/other', '/search'];

export const scenario: HttpScenario = {
  kind: 'http',
  module: PlansApp,
  async run(http) {
    const free = { 'x-user': 'ann/free' };
    const replies = [];
    for (let i = 0; i < 60; i++) replies.push(await http.get(ROUTES[i % 3], free));
    assert.deepEqual(statuses(replies), { 200: 60 });
    assert.match(replies[0].headers.get('ratelimit-policy') ?? '', /"plan";q=60;/);
    for (const route of ROUTES) assert.equal((await http.get(route, free)).status, 429, route);

    const pro = { 'x-user': 'bea/pro' };
    const proReplies = [];
    for (let i = 0; i < 70; i++) proReplies.push(await http.get(ROUTES[i % 3], pro));
    assert.deepEqual(statuses(proReplies), { 200: 70 }, 'past the free limit');
    assert.match(proReplies[0].headers.get('ratelimit-policy') ?? '', /"plan";q=600;/);
  },
};

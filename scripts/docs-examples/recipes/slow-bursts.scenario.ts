// A route that slows bursts down: five simultaneous requests all pass, one every 200 ms, none
// before its slot.
import { Module } from '@nestjs/common';
import { RateLimitModule } from 'nest-rate-limit';
import { QuotesController } from './slow-bursts.js';
import { assert, assertSpaced, atOnce, type HttpScenario, statuses } from './support.js';

@Module({ imports: [RateLimitModule.forRoot()], controllers: [QuotesController] })
class QuotesApp {}

export const scenario: HttpScenario = {
  kind: 'http',
  module: QuotesApp,
  async run(http) {
    const askedAt = performance.now();
    const replies = await atOnce(5, async () => ({
      ...(await http.get('/quotes')),
      at: performance.now(),
    }));
    assert.deepEqual(statuses(replies), { 200: 5 }, 'none refused');
    assertSpaced(
      replies.map((reply) => reply.at),
      askedAt,
      200,
    );
  },
};

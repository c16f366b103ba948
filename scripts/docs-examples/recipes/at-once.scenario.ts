// At most N at once: four exports run together per user; a fifth at once gets 429 with
// Retry-After: 1; once they end, the slots are free again.
import { Module } from '@nestjs/common';
import { RateLimitModule } from 'nest-rate-limit';
import { ReportsController } from './at-once.js';
import { assert, atOnce, type HttpScenario, statuses } from './support.js';

@Module({ imports: [RateLimitModule.forRoot()], controllers: [ReportsController] })
class ReportsApp {}

export const scenario: HttpScenario = {
  kind: 'http',
  module: ReportsApp,
  async run(http) {
    const replies = await atOnce(5, (i) => http.post(`/reports/${i}/export`));
    assert.deepEqual(statuses(replies), { 201: 4, 429: 1 });
    const refused = replies.find((reply) => reply.status === 429);
    assert.equal(refused?.headers.get('retry-after'), '1');
    assert.equal((await http.post('/reports/9/export')).status, 201, 'a slot once they end');
  },
};

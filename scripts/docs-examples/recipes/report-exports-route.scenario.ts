// Report exports on a route: four at once per user, a fifth at once gets 429 with Retry-After: 1.
import { Module } from '@nestjs/common';
import { RateLimitModule } from 'nest-rate-limit';
import { ReportExportsController } from './report-exports-route.js';
import { assert, atOnce, type HttpScenario, statuses } from './support.js';

@Module({ imports: [RateLimitModule.forRoot()], controllers: [ReportExportsController] })
class ReportsApp {}

export const scenario: HttpScenario = {
  kind: 'http',
  module: ReportsApp,
  async run(http) {
    const replies = await atOnce(5, (i) => http.post(`/reports/${i}/export`));
    assert.deepEqual(statuses(replies), { 201: 4, 429: 1 });
    assert.equal(replies.find((reply) => reply.status === 429)?.headers.get('retry-after'), '1');
    assert.equal((await http.post('/reports/9/export')).status, 201, 'a slot once they end');
  },
};

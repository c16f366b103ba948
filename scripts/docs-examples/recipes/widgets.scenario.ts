// A route that slows bursts down: twelve widgets at once all load, three at once, then one
// every 100 ms, none before its slot.
import { Module } from '@nestjs/common';
import { RateLimitModule } from 'nest-rate-limit';
import { WidgetsController } from './widgets.js';
import { assert, assertSpaced, atOnce, type HttpScenario, statuses } from './support.js';

@Module({ imports: [RateLimitModule.forRoot()], controllers: [WidgetsController] })
class DashboardApp {}

export const scenario: HttpScenario = {
  kind: 'http',
  module: DashboardApp,
  async run(http) {
    const askedAt = performance.now();
    const replies = await atOnce(12, async (i) => ({
      ...(await http.get(`/widgets/${i}`)),
      at: performance.now(),
    }));
    assert.deepEqual(statuses(replies), { 200: 12 }, 'none refused');
    // After the burst of three, the k-th slot is (k - 2) intervals on.
    assertSpaced(
      replies
        .map((reply) => reply.at)
        .sort((a, b) => a - b)
        .slice(2),
      askedAt,
      100,
    );
  },
};

// Calls to a third-party API: run() spaces calls across the app, none before its slot (90 a
// second: one every 11.1 ms), and every call runs.
import { Module } from '@nestjs/common';
import { RateLimitModule } from 'nest-rate-limit';
import { PartnerClient } from './partner.js';
import { assert, assertSpaced, atOnce, type ProviderScenario } from './support.js';

@Module({ imports: [RateLimitModule.forRoot()], providers: [PartnerClient] })
class PartnerApp {}

export const scenario: ProviderScenario = {
  kind: 'providers',
  module: PartnerApp,
  async run(app) {
    const partner = app.get(PartnerClient);
    const askedAt = performance.now();
    const startedAt = await atOnce(10, async (i) =>
      partner.call(async () => ({ i, at: performance.now() })),
    );
    assert.deepEqual(
      startedAt.map((call) => call.i),
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
      'each call answers with its own result',
    );
    assertSpaced(
      startedAt.map((call) => call.at),
      askedAt,
      1000 / 90,
    );
  },
};

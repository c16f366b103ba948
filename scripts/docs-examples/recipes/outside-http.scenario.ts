// Limits outside HTTP: a digest per user per hour, whatever the number of events.
import { Module } from '@nestjs/common';
import { RateLimitModule } from 'nest-rate-limit';
import { DigestSender, sent } from './outside-http.js';
import { assert, type ProviderScenario } from './support.js';

@Module({ imports: [RateLimitModule.forRoot()], providers: [DigestSender] })
class DigestsApp {}

export const scenario: ProviderScenario = {
  kind: 'providers',
  module: DigestsApp,
  async run(app) {
    sent.length = 0;
    const digests = app.get(DigestSender);
    for (let i = 0; i < 3; i++) await digests.onEvent('ann', 'ann@example.com');
    await digests.onEvent('bea', 'bea@example.com');
    assert.deepEqual(sent, ['ann@example.com', 'bea@example.com']);
  },
};

// Health: GET /health answers 200 with the rate limiter up, and a probe is never turned away.
import { AppModule } from './health.js';
import { assert, type HttpScenario } from './support.js';

interface HealthReply {
  status: string;
  details: Record<string, { status: string; store?: string }>;
}

export const scenario: HttpScenario = {
  kind: 'http',
  module: AppModule,
  async run(http) {
    for (let i = 0; i < 3; i++) {
      const reply = await http.get('/health');
      assert.equal(reply.status, 200);
      const body = reply.body as HealthReply;
      assert.equal(body.status, 'ok');
      assert.equal(body.details['rate-limit']?.status, 'up');
      assert.equal(body.details['rate-limit']?.store, 'memory');
      assert.equal(reply.headers.get('ratelimit'), null, '@SkipRateLimit: no limit, no headers');
    }
  },
};

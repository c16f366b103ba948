// Shadow mode: past the proposed 60 a minute nobody is refused, and onLimited hears of each.
import { AppModule, shadowRejections } from './shadow.js';
import { assert, type HttpScenario } from './support.js';

export const scenario: HttpScenario = {
  kind: 'http',
  module: AppModule,
  async run(http) {
    shadowRejections.seen.length = 0;
    for (let i = 0; i < 65; i++) {
      const reply = await http.get('/search');
      assert.equal(reply.status, 200, `request ${i + 1} passes`);
      assert.ok(!reply.headers.get('ratelimit-policy')?.includes('proposed'), 'no shadow header');
    }
    assert.deepEqual(
      shadowRejections.seen,
      Array.from({ length: 5 }, () => ({ handler: 'search', policy: 'proposed' })),
      'the 61st to the 65th, told to onLimited',
    );
  },
};

// README, Quick start: two calls per 30 s on /hello/sayHi; ten a minute across /items and
// /items/:id, whatever the id; /items/health never limited.
import { AppModule } from './quick-start.js';
import { assert, atOnce, type HttpScenario, statuses } from './support.js';

export const scenario: HttpScenario = {
  kind: 'http',
  module: AppModule,
  async run(http) {
    assert.equal((await http.get('/hello/sayHi')).status, 200);
    assert.equal((await http.get('/hello/sayHi')).status, 200);
    const third = await http.get('/hello/sayHi');
    assert.equal(third.status, 429);
    assert.ok(Number(third.headers.get('retry-after')) > 0, 'a 429 says when to retry');

    const items = await atOnce(10, (i) => http.get(i % 2 === 0 ? '/items' : `/items/${i}`));
    assert.deepEqual(statuses(items), { 200: 10 });
    assert.equal((await http.get('/items/99')).status, 429, 'the eleventh, on another id');
    assert.equal((await http.get('/items')).status, 429);
    assert.equal((await http.get('/items/health')).status, 200, '@SkipRateLimit');
  },
};

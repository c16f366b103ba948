// The console: without the admin's credentials, a 401 that asks for them and reveals nothing;
// with them, the flooding caller first in the top list, then blocked from the API (429 on the
// route while its quota was not used up) and let through again once the block is lifted.
import { AppModule } from './console.js';
import { assert, type HttpScenario } from './support.js';

const auth = { authorization: 'Basic ' + Buffer.from('admin:change-me').toString('base64') };

export const scenario: HttpScenario = {
  kind: 'http',
  module: AppModule,
  async run(http) {
    const refused = await http.get('/rate-limits/api/top');
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get('www-authenticate'), 'Basic realm="rate limits"');
    assert.doesNotMatch(JSON.stringify(refused.body), /tracker/);
    assert.equal((await http.get('/rate-limits')).status, 401);

    for (let i = 0; i < 35; i++) await http.get('/search');
    const top = await http.get('/rate-limits/api/top?window=60', auth);
    assert.equal(top.status, 200);
    const [first] = (top.body as { trackers: { tracker: string; limited: number }[] }).trackers;
    assert.match(first.tracker, /^ip:/);
    assert.equal(first.limited, 5);

    const page = await http.get('/rate-limits', auth);
    assert.equal(page.status, 200);
    assert.match(String(page.body), /<title>Rate limits<\/title>/);

    const path = `/rate-limits/api/trackers/${encodeURIComponent(first.tracker)}/block`;
    const bad = await http.post(path, { duration: 'a while' }, auth);
    assert.equal(bad.status, 400);
    assert.equal((bad.body as { field: string }).field, 'duration');
    assert.equal((await http.request('DELETE', path, undefined, auth)).status, 200);
    assert.equal((await http.get('/search')).status, 200, 'lifted: its quota is whole again');
    assert.equal((await http.post(path, { duration: '10m' }, auth)).status, 200);
    assert.equal((await http.get('/search')).status, 429, 'blocked with quota left');
  },
};

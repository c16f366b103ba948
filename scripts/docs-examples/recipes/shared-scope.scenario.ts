// One limit shared by several routes: POST /exports/csv and GET /exports/pdf draw from one
// budget of ten an hour.
import { Module } from '@nestjs/common';
import { RateLimitModule } from 'nest-rate-limit';
import { ExportsController } from './shared-scope.js';
import { assert, type HttpScenario } from './support.js';

@Module({ imports: [RateLimitModule.forRoot()], controllers: [ExportsController] })
class ExportsApp {}

export const scenario: HttpScenario = {
  kind: 'http',
  module: ExportsApp,
  async run(http) {
    for (let i = 0; i < 5; i++) {
      assert.equal((await http.post('/exports/csv')).status, 201);
      assert.equal((await http.get('/exports/pdf')).status, 200);
    }
    assert.equal((await http.get('/exports/pdf')).status, 429, 'the eleventh, on either route');
    assert.equal((await http.post('/exports/csv')).status, 429);
  },
};

// One limit shared by several routes, counted by a service under the user's key: ten exports an
// hour per user, across both routes.
import { type MiddlewareConsumer, Module, type NestModule } from '@nestjs/common';
import { RateLimitModule } from 'nest-rate-limit';
import { ExportQuota, ExportsController } from './shared-quota-service.js';
import { assert, authenticate, type HttpScenario } from './support.js';

@Module({
  imports: [RateLimitModule.forRoot()],
  controllers: [ExportsController],
  providers: [ExportQuota],
})
class ExportsApp implements NestModule {
  configure(consumer: MiddlewareConsumer) {
    consumer.apply(authenticate).forRoutes(ExportsController);
  }
}

export const scenario: HttpScenario = {
  kind: 'http',
  module: ExportsApp,
  async run(http) {
    const ann = { 'x-user': 'ann' };
    for (let i = 0; i < 5; i++) {
      assert.equal((await http.post('/exports/csv', {}, ann)).status, 201);
      assert.equal((await http.get('/exports/pdf', ann)).status, 200);
    }
    const over = await http.post('/exports/csv', {}, ann);
    assert.equal(over.status, 429, 'the eleventh export of the hour');
    assert.equal((over.body as { message?: string }).message, 'Export quota used up');
    assert.equal((await http.get('/exports/pdf', { 'x-user': 'bea' })).status, 200, 'per user');
  },
};

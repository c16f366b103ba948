// Count only failures from a service: valid codes are given back and never use up the ten an
// hour; of twenty wrong codes at once, ten are tried and ten refused before they are.
import { Module } from '@nestjs/common';
import { RateLimitModule } from 'nest-rate-limit';
import { Coupons, tried } from './coupons.js';
import { assert, atOnce, type ProviderScenario } from './support.js';

@Module({ imports: [RateLimitModule.forRoot()], providers: [Coupons] })
class CouponsApp {}

export const scenario: ProviderScenario = {
  kind: 'providers',
  module: CouponsApp,
  async run(app) {
    tried.length = 0;
    const coupons = app.get(Coupons);
    for (let i = 0; i < 15; i++) assert.equal(await coupons.redeem('ann', 'WELCOME10'), true);

    const wrong = await atOnce(20, (i) =>
      coupons.redeem('bea', `GUESS${i}`).then(
        (redeemed) => ({ redeemed }),
        (error: Error) => ({ refused: error.message }),
      ),
    );
    assert.equal(wrong.filter((w) => 'redeemed' in w && w.redeemed === false).length, 10);
    const refused = wrong.filter((w) => 'refused' in w);
    assert.equal(refused.length, 10);
    for (const r of refused)
      assert.match(String(r.refused), /^too many wrong codes; retry in \d+ ms$/);
    assert.equal(tried.filter((code) => code.startsWith('GUESS')).length, 10, 'ten tried');
  },
};

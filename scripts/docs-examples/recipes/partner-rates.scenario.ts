// Calls to a partner API: the recipe's client calls the partner's URL, which here is a small
// HTTP server of the scenario's (fetch is pointed at it): the partner sees the calls spaced,
// one every 100 ms, none before its slot, and an error it answers reaches the caller.
import { createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import { Module } from '@nestjs/common';
import { RateLimitModule } from 'nest-rate-limit';
import { PartnerClient } from './partner-rates.js';
import { assert, assertSpaced, atOnce, type ProviderScenario } from './support.js';

@Module({ imports: [RateLimitModule.forRoot()], providers: [PartnerClient] })
class PartnerApp {}

const PARTNER_URL = 'https://partner.example';

export const scenario: ProviderScenario = {
  kind: 'providers',
  module: PartnerApp,
  async run(app) {
    const received: number[] = [];
    const partner = createServer((req, res) => {
      received.push(performance.now());
      const currency = req.url?.split('/').pop() ?? '';
      res.statusCode = currency === 'XXX' ? 500 : 200;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ currency }));
    });
    await new Promise<void>((resolve) => partner.listen(0, '127.0.0.1', resolve));
    const local = `http://127.0.0.1:${(partner.address() as AddressInfo).port}`;
    const realFetch = globalThis.fetch;
    globalThis.fetch = (input, init) =>
      realFetch(typeof input === 'string' ? input.replace(PARTNER_URL, local) : input, init);
    try {
      const client = app.get(PartnerClient);
      const askedAt = performance.now();
      const rates = await atOnce(6, (i) => client.rates(`C${i}`));
      assert.deepEqual(
        rates,
        Array.from({ length: 6 }, (_, i) => ({ currency: `C${i}` })),
      );
      assertSpaced(received, askedAt, 100);
      await assert.rejects(client.rates('XXX'), /partner answered 500/);
    } finally {
      globalThis.fetch = realFetch;
      partner.close();
    }
  },
};

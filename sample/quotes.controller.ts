import { Controller, Get } from '@nestjs/common';
import { RateLimit } from 'nest-rate-limit';
import { PartnerQuotes } from './partner-quotes.service.js';

@Controller('quotes')
export class QuotesController {
  constructor(private readonly partner: PartnerQuotes) {}

  /**
   * Five a second for each client, one every 200 ms. A burst is held until each request's turn,
   * up to 2 s, instead of being answered 429. Try five at once and watch `at`:
   * for i in 1 2 3 4 5; do curl -s localhost:3000/quotes & done; wait
   */
  @RateLimit({ algorithm: 'leaky-bucket', threshold: 5, period: '1s', burst: 1, maxWait: '2s' })
  @Get()
  async latest() {
    const quote = await this.partner.latest('ACME');
    return { ...quote, at: new Date().toISOString() };
  }
}

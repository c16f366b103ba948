import { Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { type RateLimitPolicy, RateLimitService } from 'nest-rate-limit';

export interface Quote {
  symbol: string;
  price: number;
}

/**
 * The partner allows 10 calls a second for the whole app: one every 100 ms, on every instance.
 * While Redis is down, no call goes out, rather than 10 a second from each instance.
 */
const PARTNER: RateLimitPolicy = {
  name: 'partner',
  algorithm: 'leaky-bucket',
  period: '1s',
  threshold: 10,
  burst: 1,
  onStoreError: 'deny',
};

/** Calls a (fake) partner API, at its pace: each call waits for its slot, up to 5 s. */
@Injectable()
export class PartnerQuotes {
  constructor(private readonly rateLimit: RateLimitService) {}

  latest(symbol: string): Promise<Quote> {
    return this.rateLimit.run('partner-quotes', PARTNER, () => this.fetchQuote(symbol), {
      maxWait: '5s',
    });
  }

  /** Stands in for `fetch('https://partner.example/quotes/…')`. */
  private async fetchQuote(symbol: string): Promise<Quote> {
    await sleep(20);
    return { symbol, price: 101.25 };
  }
}

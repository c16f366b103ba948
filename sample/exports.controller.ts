import { Controller, Post } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { RateLimit } from 'nest-rate-limit';

@Controller('exports')
export class ExportsController {
  /**
   * Two exports at once for each client; a third, while two run, gets 429 with Retry-After: 1.
   * `period` is not how long an export may take: the lease is renewed while it runs, and would
   * free itself 30 s after a crash. Try three at once:
   * for i in 1 2 3; do curl -si -X POST localhost:3000/exports | head -1 & done; wait
   */
  @RateLimit({ algorithm: 'concurrency', threshold: 2, period: '30s' })
  @Post()
  async create() {
    await sleep(1000); // the export's work
    return { status: 'done', file: 'report.csv' };
  }
}

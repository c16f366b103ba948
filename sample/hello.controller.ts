import { Controller, Get } from '@nestjs/common';
import { RateLimit } from 'nest-rate-limit';

@Controller('hello')
export class HelloController {
  /** The seed's example: two calls per 30 seconds for each client. */
  @RateLimit({ period: 30, threshold: 2 })
  @Get('sayHi')
  sayHi() {
    return { message: 'Hi!' };
  }
}

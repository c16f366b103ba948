import { Controller, Get, Param } from '@nestjs/common';
import { RateLimit, SkipRateLimit } from 'nest-rate-limit';

/** A class-level limit covers every route here: ten calls a minute, whatever the id. */
@RateLimit({ period: '1m', threshold: 10 })
@Controller('items')
export class ItemsController {
  @SkipRateLimit()
  @Get('health')
  health() {
    return { status: 'ok' };
  }

  @Get(':id')
  findOne(@Param('id') id: string) {
    return { id };
  }
}

import { Controller, Get, Param } from '@nestjs/common';
import { RateLimit, SkipRateLimit } from 'nest-rate-limit';

/**
 * A class-level limit covers every route here, and `scope: 'controller'` makes it one budget:
 * ten calls a minute per client across the list and the items, whatever the id.
 */
@RateLimit({ period: '1m', threshold: 10, scope: 'controller' })
@Controller('items')
export class ItemsController {
  @SkipRateLimit()
  @Get('health')
  health() {
    return { status: 'ok' };
  }

  @Get()
  list() {
    return [];
  }

  @Get(':id')
  findOne(@Param('id') id: string) {
    return { id };
  }
}

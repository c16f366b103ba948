import {
  type CanActivate,
  Body,
  Controller,
  Delete,
  Get,
  Header,
  HttpCode,
  Param,
  Post,
  Put,
  Query,
  Req,
  type Type,
  UseGuards,
} from '@nestjs/common';
import { ConsoleActions } from './console-actions.js';
import { CONSOLE_PAGE } from './console-page.js';

/** Who took an action, as the request's authenticated user names them (`request.user`). */
function actorOf(request: { user?: unknown }): string {
  const user = request.user;
  if (typeof user === 'string' && user !== '') return `User ${JSON.stringify(user)}`;
  if (typeof user === 'object' && user !== null) {
    const u = user as Record<string, unknown>;
    for (const field of ['id', 'sub', 'username', 'name', 'email']) {
      const value = u[field];
      if (typeof value === 'string' || typeof value === 'number') {
        return `User ${JSON.stringify(String(value))}`;
      }
    }
  }
  return 'An unnamed user';
}

/**
 * The console's page and API, mounted at `path` behind `guard`: a class made per `forRoot()`,
 * since a controller's path and guards are decorators.
 */
export function consoleController(
  path: string,
  guard: Type<CanActivate> | CanActivate | undefined,
): Type<unknown> {
  @Controller(path)
  class RateLimitConsoleController {
    constructor(private readonly actions: ConsoleActions) {}

    @Get()
    @Header('Content-Type', 'text/html; charset=utf-8')
    @Header('Cache-Control', 'no-store')
    page(): string {
      return CONSOLE_PAGE;
    }

    @Get('api/top')
    top(@Query('window') window?: string) {
      return this.actions.top(window);
    }

    @Get('api/rates')
    rates() {
      return this.actions.rates();
    }

    @Get('api/health')
    health() {
      return this.actions.healthOf();
    }

    @Get('api/trackers/:tracker')
    lookup(@Param('tracker') tracker: string) {
      return this.actions.lookup(tracker);
    }

    @Post('api/trackers/:tracker/block')
    @HttpCode(200)
    block(@Param('tracker') tracker: string, @Body() body: unknown, @Req() request: object) {
      return this.actions.block(tracker, body, actorOf(request));
    }

    @Delete('api/trackers/:tracker/block')
    unblock(@Param('tracker') tracker: string, @Req() request: object) {
      return this.actions.unblock(tracker, actorOf(request));
    }

    @Post('api/trackers/:tracker/reset')
    @HttpCode(200)
    reset(@Param('tracker') tracker: string, @Req() request: object) {
      return this.actions.reset(tracker, actorOf(request));
    }

    @Get('api/overrides')
    overrides() {
      return this.actions.overrides();
    }

    @Put('api/overrides/:policy')
    setOverride(@Param('policy') policy: string, @Body() body: unknown, @Req() request: object) {
      return this.actions.setOverride(policy, body, actorOf(request));
    }

    @Delete('api/overrides/:policy')
    clearOverride(
      @Param('policy') policy: string,
      @Query('tracker') tracker: string | undefined,
      @Req() request: object,
    ) {
      return this.actions.clearOverride(policy, tracker, actorOf(request));
    }
  }
  if (guard !== undefined) UseGuards(guard)(RateLimitConsoleController);
  return RateLimitConsoleController;
}

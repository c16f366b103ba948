import { type DynamicModule, Module } from '@nestjs/common';
import { ActivitySharing } from './activity-sharing.js';
import { ConsoleActions } from './console-actions.js';
import { consoleController } from './console.controller.js';
import {
  CONSOLE_OPTIONS,
  type RateLimitConsoleOptions,
  resolveConsoleOptions,
} from './console-options.js';

/**
 * A console for the people on call, at `path` (default `/rate-limits`) behind `guard`: who is
 * limited now across every instance, decisions per route, the store's health, the overrides in
 * force, and actions on a tracker or an override. Import it beside `RateLimitModule`; an app
 * that does not import it loads none of it. See docs/console.md.
 *
 * @example
 * ```ts
 * @Module({
 *   imports: [
 *     RateLimitModule.forRoot({ redis: process.env.REDIS_URL }),
 *     RateLimitConsoleModule.forRoot({ guard: AdminGuard }),
 *   ],
 * })
 * export class AppModule {}
 * ```
 */
@Module({})
export class RateLimitConsoleModule {
  static forRoot(options: RateLimitConsoleOptions): DynamicModule {
    const resolved = resolveConsoleOptions(options);
    return {
      module: RateLimitConsoleModule,
      imports: resolved.imports,
      controllers: [consoleController(resolved.path, resolved.guard)],
      providers: [
        { provide: CONSOLE_OPTIONS, useValue: resolved },
        ActivitySharing,
        ConsoleActions,
      ],
    };
  }
}

import { SetMetadata } from '@nestjs/common';
import { RATE_LIMIT_POLICY, RATE_LIMIT_SKIP } from './rate-limit.constants.js';
import { type RateLimitPolicy, resolvePolicy } from './rate-limit.policy.js';

type ClassOrMethodDecorator = (
  target: object,
  propertyKey?: string | symbol,
  descriptor?: PropertyDescriptor,
) => void;

/**
 * Limits a controller method, or every method of a controller, to `threshold` requests per
 * `period` for each user (or client IP) and route. A method-level limit replaces a class-level
 * one. Invalid values throw here, when the class is defined, naming `Controller.method`.
 *
 * @param policy `period` (seconds, or `'500ms'`, `'30s'`, `'5m'`, `'1h'`, `'1d'`; default 60) and
 *   `threshold` (a positive integer; default 3).
 *
 * @example
 * ```ts
 * @Controller('hello')
 * export class HelloController {
 *   @RateLimit({ period: 30, threshold: 2 })
 *   @Get('sayHi')
 *   sayHi() {
 *     return 'hi';
 *   }
 * }
 * ```
 */
export function RateLimit(policy?: RateLimitPolicy): ClassOrMethodDecorator {
  return (target, propertyKey, descriptor) => {
    const resolved = resolvePolicy(policy, `@RateLimit on ${placeName(target, propertyKey)}`);
    SetMetadata(RATE_LIMIT_POLICY, resolved)(target, propertyKey!, descriptor!);
  };
}

/**
 * Exempts a method, or a whole controller, from rate limiting. On a method it overrides a
 * class-level `@RateLimit`.
 *
 * @example
 * ```ts
 * @RateLimit({ period: '1m', threshold: 100 })
 * @Controller('items')
 * export class ItemsController {
 *   @SkipRateLimit()
 *   @Get('health')
 *   health() {
 *     return 'ok';
 *   }
 * }
 * ```
 */
export function SkipRateLimit(): ClassOrMethodDecorator {
  return (target, propertyKey, descriptor) => {
    SetMetadata(RATE_LIMIT_SKIP, true)(target, propertyKey!, descriptor!);
  };
}

/** `ItemsController.list` for a method, `ItemsController` for a class. */
export function placeName(target: object, propertyKey?: string | symbol): string {
  if (propertyKey === undefined) return (target as { name?: string }).name ?? 'anonymous class';
  const owner =
    (target as { constructor?: { name?: string } }).constructor?.name ?? 'anonymous class';
  return `${owner}.${String(propertyKey)}`;
}

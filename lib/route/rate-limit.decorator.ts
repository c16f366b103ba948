import 'reflect-metadata';
import { UseInterceptors } from '@nestjs/common';
import { anyHoldsLeases } from '../algorithms/registry.js';
import { RATE_LIMIT_POLICY, RATE_LIMIT_SKIP } from '../rate-limit.constants.js';
import { RateLimitInterceptor } from './rate-limit.interceptor.js';
import {
  appendTemplates,
  compileTemplates,
  type PolicyTemplate,
} from '../templates/policy-template.js';
import { type RoutePolicy } from '../templates/route-policy.js';

type ClassOrMethodDecorator = (
  target: object,
  propertyKey?: string | symbol,
  descriptor?: PropertyDescriptor,
) => void;

/**
 * Limits a controller method, or every method of a controller, per user (or client IP) and
 * route. Pass several policies, or stack the decorator, to enforce them together: a request is
 * counted by all of them or, if any rejects it, by none. A method-level limit replaces a
 * class-level one. Invalid values and unknown (misspelled) fields throw here, when the class is
 * defined, naming `Controller.method`.
 *
 * @param policies `period` (seconds, or `'500ms'`, `'30s'`, `'5m'`, `'1h'`, `'1d'`; default 60),
 *   `threshold` (an integer from 1 to 10^9; default 3), `algorithm` (default
 *   `'sliding-window'`; with `calendar`, `'fixed-window'`), `burst`, `cost` and `name`. `period`,
 *   `threshold` and `cost` may be functions of the `ExecutionContext`, e.g. to read the
 *   customer's plan. `scope` shares a policy's budget beyond its route: `'controller'`, `'app'`
 *   or a name of your own.
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
 *
 *   @RateLimit([
 *     { period: '1s', threshold: 5 },
 *     { period: '1h', threshold: 1000, algorithm: 'token-bucket' },
 *   ])
 *   @Post('search')
 *   search() {}
 * }
 * ```
 */
export function RateLimit(policies?: RoutePolicy | readonly RoutePolicy[]): ClassOrMethodDecorator {
  return (target, propertyKey, descriptor) => {
    const where = `@RateLimit on ${placeName(target, propertyKey)}`;
    const holder = descriptor?.value ?? target;
    const existing = (Reflect.getOwnMetadata(RATE_LIMIT_POLICY, holder) ?? []) as PolicyTemplate[];
    const added = compileTemplates(policies, where);
    const templates = appendTemplates(existing, added, where);
    Reflect.defineMetadata(RATE_LIMIT_POLICY, templates, holder);
    // Outside HTTP, only an interceptor sees how a handler ended, and on every transport only it
    // sees what the handler returned; only the handlers that count outcomes, hold leases or settle
    // usage get it.
    if (added.some((t) => t.count !== 'all' || t.settle !== undefined) || anyHoldsLeases(added)) {
      if (descriptor === undefined) UseInterceptors(RateLimitInterceptor)(target as never);
      else UseInterceptors(RateLimitInterceptor)(target, propertyKey!, descriptor);
    }
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
  return (target, _propertyKey, descriptor) => {
    Reflect.defineMetadata(RATE_LIMIT_SKIP, true, descriptor?.value ?? target);
  };
}

/** `ItemsController.list` for a method, `ItemsController` for a class. */
export function placeName(target: object, propertyKey?: string | symbol): string {
  if (propertyKey === undefined) return (target as { name?: string }).name ?? 'anonymous class';
  const owner =
    (target as { constructor?: { name?: string } }).constructor?.name ?? 'anonymous class';
  return `${owner}.${String(propertyKey)}`;
}

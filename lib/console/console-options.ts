import { type CanActivate, type ModuleMetadata, type Type } from '@nestjs/common';
import { checkFields, type FieldList, knownFields } from '../policy/known-fields.js';
import { configError } from '../policy/validation.js';

/**
 * How `RateLimitConsoleModule.forRoot()` mounts the console.
 *
 * @example
 * ```ts
 * RateLimitConsoleModule.forRoot({ path: '/ops/rate-limits', guard: AdminGuard });
 * ```
 */
export interface RateLimitConsoleOptions {
  /** Where the page is, and its API under `<path>/api`. Default `'/rate-limits'`. */
  path?: string;
  /**
   * Who may use the console: a guard class (built in the console's module, with `imports`) or
   * instance, in front of the page and every API call. Required, unless `allowUnauthenticated`.
   */
  guard?: Type<CanActivate> | CanActivate;
  /** No guard, for local development: refused when `NODE_ENV` is `production`. */
  allowUnauthenticated?: boolean;
  /** Modules that provide what a guard class needs. */
  imports?: ModuleMetadata['imports'];
}

/** Where the module provides its checked options, for the console's own classes. */
export const CONSOLE_OPTIONS = Symbol('RateLimitConsoleOptions');

/** The options, checked. */
export interface ResolvedConsoleOptions {
  readonly path: string;
  readonly guard: Type<CanActivate> | CanActivate | undefined;
  readonly imports: NonNullable<ModuleMetadata['imports']>;
}

const FIELDS = knownFields({
  path: true,
  guard: true,
  allowUnauthenticated: true,
  imports: true,
} as const satisfies FieldList<RateLimitConsoleOptions>);

const WHERE = 'RateLimitConsoleModule.forRoot';
// A path of plain segments: a parameter or wildcard would capture the API's own routes.
const PATH = /^(\/[A-Za-z0-9._~-]+)+$/;

/** Checks the options, naming the field of the first that is wrong. */
export function resolveConsoleOptions(
  options: RateLimitConsoleOptions | undefined,
  environment = process.env.NODE_ENV,
): ResolvedConsoleOptions {
  if (options === null || typeof options !== 'object') {
    throw configError(WHERE, 'options', options, 'an object with a guard');
  }
  checkFields(options, FIELDS, WHERE);
  const path = options.path ?? '/rate-limits';
  if (typeof path !== 'string' || !PATH.test(path)) {
    throw configError(WHERE, 'path', path, "a path of plain segments, like '/rate-limits'");
  }
  const { guard, allowUnauthenticated } = options;
  if (allowUnauthenticated !== undefined && typeof allowUnauthenticated !== 'boolean') {
    throw configError(WHERE, 'allowUnauthenticated', allowUnauthenticated, 'true or false');
  }
  if (guard === undefined) {
    if (allowUnauthenticated !== true) {
      const expected =
        'a guard (a CanActivate class or instance) that decides who may use the console; ' +
        'allowUnauthenticated: true opens it to anyone, for local development only';
      throw configError(WHERE, 'guard', guard, expected);
    }
    if (environment === 'production') {
      const expected = 'left out when NODE_ENV is production: give a guard';
      throw configError(WHERE, 'allowUnauthenticated', allowUnauthenticated, expected);
    }
  } else if (!isGuard(guard)) {
    throw configError(WHERE, 'guard', guard, 'a CanActivate class or instance');
  }
  const imports = options.imports ?? [];
  if (!Array.isArray(imports)) throw configError(WHERE, 'imports', imports, 'an array of modules');
  return Object.freeze({ path, guard, imports });
}

function isGuard(guard: unknown): guard is Type<CanActivate> | CanActivate {
  if (typeof guard === 'function') return typeof guard.prototype?.canActivate === 'function';
  return (
    typeof guard === 'object' &&
    guard !== null &&
    typeof (guard as CanActivate).canActivate === 'function'
  );
}

import { configError } from '../policy/validation.js';
import { type RouteScope } from './route-policy.js';
import { encodeKeyPart } from '../keys/route-keys.js';

/** Longest custom scope name; the key holds it (encoded), so it must stay short. */
export const MAX_SCOPE_LENGTH = 100;

const EXPECTED = `'route', 'controller', 'app' or a name of 1 to ${MAX_SCOPE_LENGTH} characters`;

/** A policy's `scope`, checked where it is declared; `'route'` when absent. */
export function checkScope(value: unknown, where: string): RouteScope {
  if (value === undefined) return 'route';
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_SCOPE_LENGTH) {
    throw configError(where, 'scope', value, EXPECTED);
  }
  return value;
}

/**
 * Where a shared scope's budget lives in a key: `app`, `c|<controller class>` or
 * `n|<name>`; undefined for `'route'`. A custom name is marked, so that it can never spell a
 * built-in one, and encoded.
 */
export function scopeMark(scope: RouteScope, controller: string): string | undefined {
  switch (scope) {
    case 'route':
      return undefined;
    case 'controller':
      return 'c|' + encodeKeyPart(controller);
    case 'app':
      return 'app';
    default:
      return 'n|' + encodeKeyPart(scope);
  }
}

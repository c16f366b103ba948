import { configError } from '../policy/validation.js';
import { type PolicyTemplate } from './policy-template.js';
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
 * What a route's policies must agree on once one of them shares its budget beyond the route.
 * Every key of one decision takes the tracker as its Redis Cluster hash tag, so that the shared
 * key is the same whichever route uses it and still sits in one slot with the route's others:
 * the policies must count the same tracker. And a shared key has no position in it, so two
 * policies of a route in the same scope are told apart by their names alone.
 */
export function checkScopedRoute(templates: readonly PolicyTemplate[], where: string): void {
  const shared = templates.find((t) => t.scope !== 'route');
  if (shared === undefined) return;
  if (templates.some((t) => t.tracker !== shared.tracker)) {
    throw configError(
      where,
      'scope',
      shared.scope,
      "'route' (or omitted) unless every policy of the route counts the same tracker: the " +
        "module's, or one tracker function they all share",
    );
  }
  for (const t of templates) {
    if (t.scope === 'route' || t.name !== undefined) continue;
    if (templates.some((other) => other !== t && other.scope === t.scope)) {
      throw configError(
        where,
        'name',
        t.name,
        `given on each policy that shares scope ${JSON.stringify(t.scope)} with another on the route`,
      );
    }
  }
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

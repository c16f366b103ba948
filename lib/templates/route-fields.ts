import { algorithmOf } from '../algorithms/registry.js';
import { checkAlgorithm } from '../policy/rate-limit.policy.js';
import { configError, parseDuration } from '../policy/validation.js';
import { COUNT_MODES, type CountMode, type RoutePolicy, type RouteScope } from './route-policy.js';
import { checkScope } from './route-scope.js';

/** Checks the fields only routes take, and gives them with their defaults. */
export function checkRouteFields(policy: RoutePolicy | undefined, where: string) {
  if (policy === undefined)
    return {
      tracker: undefined,
      count: 'all' as const,
      shadow: false,
      maxWaitMs: 0,
      scope: 'route' as RouteScope,
      settle: undefined,
    };
  const tracker = policy?.tracker;
  if (tracker !== undefined && typeof tracker !== 'function') {
    throw configError(where, 'tracker', tracker, 'a function of the ExecutionContext');
  }
  const count = policy?.count ?? 'all';
  if (!COUNT_MODES.includes(count)) {
    throw configError(where, 'count', count, `one of ${COUNT_MODES.join(', ')}`);
  }
  const shadow = policy?.shadow ?? false;
  if (typeof shadow !== 'boolean') throw configError(where, 'shadow', shadow, 'true or false');
  const maxWaitMs =
    policy.maxWait === undefined || policy.maxWait === 0
      ? 0
      : parseDuration(policy.maxWait, 'maxWait', where);
  if (shadow && maxWaitMs > 0) {
    throw configError(
      where,
      'maxWait',
      policy.maxWait,
      'omitted on a shadow policy, which never holds a request',
    );
  }
  const scope = checkScope(policy.scope, where);
  const settle = checkSettle(policy, count, where);
  return { tracker, count, shadow, maxWaitMs, scope, settle };
}

/** A policy's `settle`: a function, on a rate policy that counts the requests that succeed. */
function checkSettle(policy: RoutePolicy, count: CountMode, where: string): RoutePolicy['settle'] {
  const { settle } = policy;
  if (settle === undefined) return undefined;
  if (typeof settle !== 'function') {
    throw configError(where, 'settle', settle, 'a function of the context and the result');
  }
  const algorithm = checkAlgorithm(policy, where);
  if (algorithmOf(algorithm).holdsLeases) {
    throw configError(
      where,
      'settle',
      'a function',
      `omitted for ${algorithm}, which limits calls at once, not what they use`,
    );
  }
  if (count === 'failures') {
    throw configError(
      where,
      'settle',
      'a function',
      "omitted with count: 'failures' (a request that succeeds is given back, not settled)",
    );
  }
  return settle;
}

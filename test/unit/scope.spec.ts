/** Shared scopes: the key shapes they add, and what `@RateLimit` refuses about `scope`. */
import { describe, expect, it } from '@jest/globals';
import { RateLimit } from '../../lib/index.js';
import { type RouteScope } from '../../lib/templates/route-policy.js';
import { resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import { encodeKeyPart, policyTrackerPart, RouteKeys } from '../../lib/keys/route-keys.js';
import { MAX_SCOPE_LENGTH, scopeMark } from '../../lib/templates/route-scope.js';
import { decorationError, onMethod } from '../support/decoration.js';

/** The Redis Cluster hash tag of a key: what lies between the first `{` and the next `}`. */
function hashTag(key: string): string {
  const open = key.indexOf('{');
  return key.slice(open + 1, key.indexOf('}', open + 1));
}

describe('keys of shared scopes', () => {
  const keys = new RouteKeys('rl');
  const minute = resolvePolicy({ period: 60, threshold: 60 }, 'test');
  const bucket = resolvePolicy({ period: 60, threshold: 60, algorithm: 'token-bucket' }, 'test');
  const shared = (tracker: string, scope: RouteScope, controller = 'C', policy = minute) =>
    keys.scopedHead(encodeKeyPart(tracker)) +
    RouteKeys.sharedTail(scopeMark(scope, controller)!, policy);
  const perRoute = (tracker: string, route: string, index = 0, policy = minute) =>
    keys.scopedHead(encodeKeyPart(tracker)) +
    RouteKeys.scopedRouteTail(RouteKeys.scopedRoute(route), policy, index);

  it('read well: the tracker is the hash tag, then the scope, then the policy id', () => {
    expect(shared('user:42', 'app')).toBe('rl:{user:42}@app:sw:60-per-1m');
    expect(shared('user:42', 'controller', 'ThingsController')).toBe(
      'rl:{user:42}@c|ThingsController:sw:60-per-1m',
    );
    expect(shared('user:42', 'exports')).toBe('rl:{user:42}@n|exports:sw:60-per-1m');
    expect(perRoute('user:42', 'GET /things', 1)).toBe('rl:{user:42}@r|GET /things:1:sw:60-per-1m');
  });

  it('are the same from every route, and differ by scope, tracker and policy id', () => {
    expect(shared('user:1', 'app', 'A')).toBe(shared('user:1', 'app', 'B'));
    const all = [
      shared('user:1', 'app'),
      shared('user:2', 'app'),
      shared('user:1', 'app', 'C', bucket),
      shared('user:1', 'controller', 'A'),
      shared('user:1', 'controller', 'B'),
      shared('user:1', 'named'),
      shared('user:1', 'other'),
    ];
    expect(new Set(all).size).toBe(all.length);
  });

  it('keep custom names apart from the built-in scopes, whatever they spell', () => {
    const marks = ['app', 'controller', 'c|A', 'n|x', 'r|GET /a', 'app:sw', 'A', '@app'].map((s) =>
      scopeMark(s, 'A'),
    );
    expect(scopeMark('app', 'A')).toBe('app');
    expect(scopeMark('controller', 'A')).toBe('c|A');
    // 'controller' and 'app' are the built-ins; every other name is marked and encoded.
    expect(marks.slice(2)).toEqual([
      'n|c%7CA',
      'n|n%7Cx',
      'n|r%7CGET /a',
      'n|app:sw',
      'n|A',
      'n|@app',
    ]);
    expect(new Set(marks).size).toBe(marks.length);
    expect(scopeMark('route', 'A')).toBeUndefined();
  });

  it('never collide with route, route-tag or service keys, nor with each other', () => {
    const parts = ['a', 'a|b', 'a}', '{a', 'a:0', 'app', 'c|A', 'r|x', '@app', '', 'user:1'];
    const built = new Map<string, string>();
    const add = (what: string, key: string) => {
      expect(built.get(key) ?? what).toBe(what);
      built.set(key, what);
    };
    for (const x of parts) {
      for (const y of parts) {
        const ey = encodeKeyPart(y);
        add(`route ${x} ${y}`, keys.routeHead(x) + ey + RouteKeys.tail(minute, 0));
        add(`routeTag ${x} ${y}`, keys.withTracker(x, true, ey, minute, 0));
        add(`service ${x}|${y}`, keys.forKey(`${x}|${y}`, minute, 0));
        add(`service ${x}@${y}`, keys.forKey(`${x}}@${y}`, minute, 0));
        add(`app ${x}`, shared(x, 'app'));
        add(`controller ${x} ${y}`, shared(x, 'controller', y));
        if (y !== '' && y !== 'route' && y !== 'app' && y !== 'controller')
          add(`named ${x} ${y}`, shared(x, y));
        add(`per-route ${x} ${y}`, perRoute(x, y));
        add(`per-route ${x} ${y} 1`, perRoute(x, y, 1));
      }
    }
    expect(built.size).toBeGreaterThan(parts.length * parts.length * 7);
  });

  it('put every key of one decision in one slot: the tracker, for shared and per-route keys alike', () => {
    for (const tracker of ['user:1', 'a}b{c', '\n', 'x'.repeat(1000)]) {
      const tag = hashTag(shared(tracker, 'app'));
      expect(tag).toBe(encodeKeyPart(tracker));
      expect(hashTag(perRoute(tracker, 'GET /items{/:id}'))).toBe(tag);
      expect(hashTag(shared(tracker, 'controller', 'A}{'))).toBe(tag);
      expect(hashTag(shared(tracker, 'a}b'))).toBe(tag);
    }
    // A policy's own tracker is marked, so it never shares a budget with a module tracker.
    const own = policyTrackerPart('user:1', 'test')!;
    expect(keys.scopedHead(own)).not.toBe(keys.scopedHead(encodeKeyPart('user:1')));
  });
});

describe('@RateLimit validation of scope, when the class is defined', () => {
  const expected = `'route', 'controller', 'app' or a name of 1 to ${MAX_SCOPE_LENGTH} characters`;

  it.each<[unknown, string]>([
    ['', '""'],
    [42, '42'],
    [null, 'null'],
    [['app'], '["app"]'],
    ['x'.repeat(MAX_SCOPE_LENGTH + 1), JSON.stringify('x'.repeat(MAX_SCOPE_LENGTH + 1))],
  ])('rejects scope %p', (scope, shown) => {
    const error = decorationError(onMethod({ scope: scope as RouteScope }));
    expect(error.message).toBe(`@RateLimit on X.m: scope must be ${expected}, got ${shown}`);
  });

  it('accepts the built-in scopes and any name up to the bound', () => {
    for (const scope of ['route', 'controller', 'app', 'exports', 'x'.repeat(MAX_SCOPE_LENGTH)]) {
      expect(onMethod({ scope })).not.toThrow();
    }
  });

  it('names the class for a class-level policy', () => {
    const error = decorationError(() => {
      @RateLimit({ scope: '' })
      class ThingsController {}
      return ThingsController;
    });
    expect(error.message).toBe(`@RateLimit on ThingsController: scope must be ${expected}, got ""`);
  });

  it('rejects a shared scope on a route whose policies count different trackers', () => {
    const byName = () => 'alice';
    const message =
      "@RateLimit on X.m: scope must be 'route' (or omitted) unless every policy of the route " +
      'counts the same tracker: the module\'s, or one tracker function they all share, got "app"';
    expect(
      decorationError(
        onMethod([
          { name: 'a', tracker: byName },
          { name: 'b', scope: 'app' },
        ]),
      ).message,
    ).toBe(message);
    expect(
      decorationError(
        onMethod([
          { name: 'a', tracker: byName, scope: 'app' },
          { name: 'b', tracker: () => 'bob' },
        ]),
      ).message,
    ).toBe(message);
    // Stacked decorators are checked together.
    const stacked = decorationError(() => {
      class X {
        @RateLimit({ name: 'a', scope: 'app' })
        @RateLimit({ name: 'b', tracker: byName })
        m() {}
      }
      return X;
    });
    expect(stacked.message).toBe(message);
  });

  it('accepts a shared scope where every policy counts one shared tracker function', () => {
    const byName = () => 'alice';
    expect(
      onMethod([
        { name: 'a', tracker: byName },
        { name: 'b', tracker: byName, scope: 'app' },
      ]),
    ).not.toThrow();
    expect(onMethod({ tracker: byName, scope: 'controller' })).not.toThrow();
  });

  it('asks for names on dynamic policies that share a scope on one route', () => {
    const error = decorationError(
      onMethod([
        { period: 60, threshold: () => 3, scope: 'app' },
        { period: 60, threshold: 3, scope: 'app' },
      ]),
    );
    expect(error.message).toBe(
      '@RateLimit on X.m: name must be given on each policy that shares scope "app" with another on the route, got undefined',
    );
    // Alone in its scope, or named, a dynamic policy is fine.
    expect(
      onMethod([
        { period: 60, threshold: () => 3, scope: 'app' },
        { period: 60, threshold: 3, scope: 'exports' },
      ]),
    ).not.toThrow();
    expect(
      onMethod([
        { period: 60, threshold: () => 3, scope: 'app', name: 'plan' },
        { period: 60, threshold: 3, scope: 'app' },
      ]),
    ).not.toThrow();
  });
});

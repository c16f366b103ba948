import { describe, expect, it } from '@jest/globals';
import { encodeKeyPart, RouteKeys, MAX_KEY_PART } from '../../lib/keys/route-keys.js';
import { normalizeIp, UNKNOWN_IP } from '../../lib/transports/client-ip.js';
import { resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import { defaultTracker } from '../../lib/transports/trackers.js';

/** The Redis Cluster hash tag of a key: what lies between the first `{` and the next `}`. */
function hashTag(key: string): string {
  const open = key.indexOf('{');
  const close = key.indexOf('}', open + 1);
  return key.slice(open + 1, close);
}

describe('keys', () => {
  const keys = new RouteKeys('rl');
  const seedPolicy = resolvePolicy({ period: 30, threshold: 2 }, 'test');
  const routeKey = (route: string, tracker: string) =>
    keys.routeHead(route) + encodeKeyPart(tracker) + RouteKeys.tail(seedPolicy, 0);

  it('reads well for ordinary input', () => {
    expect(routeKey('GET /items/:id', 'ip:10.0.0.1')).toBe(
      'rl:{GET /items/:id|ip:10.0.0.1}:0:sw:2-per-30s',
    );
    expect(
      keys.forKey('laoqian:reply', resolvePolicy({ period: 60, threshold: 5 }, 'test'), 0),
    ).toBe('rl:{laoqian:reply}:0:sw:5-per-1m');
    const bucket = resolvePolicy(
      { period: '1h', threshold: 1000, algorithm: 'leaky-bucket' },
      'test',
    );
    expect(keys.forKey('k', bucket, 1)).toBe('rl:{k}:1:gcra:1000-per-1h');
  });

  it('never collides: user a:b on route c differs from user a on route b:c, and from separators', () => {
    const pairs: Array<[string, string]> = [
      ['c', 'a:b'],
      ['b:c', 'a'],
      ['a|b', 'c'],
      ['a', 'b|c'],
      ['a}', 'b'],
      ['a', '}b'],
      ['a%7D', 'b'],
      ['x', '#abc'],
      ['x', '\ud800'],
      ['x', '\ud801'],
      ['x', '\ufffd'],
    ];
    const built = pairs.map(([route, tracker]) => routeKey(route, tracker));
    expect(new Set(built).size).toBe(pairs.length);
    const programmatic = keys.forKey('c|a:b', seedPolicy, 0);
    expect(built).not.toContain(programmatic);
  });

  it('keeps the whole route and tracker inside one hash tag, whatever they contain', () => {
    const nasty = [
      '{',
      '}',
      '}{',
      'a}b{c',
      '\n',
      '\0',
      '\u00e9\u4e2d\ud83d\ude00',
      'x'.repeat(10_000),
    ];
    for (const route of ['GET /items{/:id}', 'GET /a']) {
      for (const tracker of nasty) {
        const key = routeKey(route, tracker);
        const tag = hashTag(key);
        expect(key.startsWith(`rl:{${tag}}:`)).toBe(true);
        expect(tag.includes('{')).toBe(false);
        // eslint-disable-next-line no-control-regex -- asserting control characters are gone
        expect(key).not.toMatch(/[\u0000-\u001f]/);
      }
    }
  });

  it('hashes very long parts to a bounded length', () => {
    const long = 'u'.repeat(10_000);
    const encoded = encodeKeyPart(long);
    expect(encoded).toMatch(/^#[A-Za-z0-9_-]{43}$/);
    expect(encodeKeyPart('u'.repeat(MAX_KEY_PART))).toBe('u'.repeat(MAX_KEY_PART));
    expect(encodeKeyPart(long + 'x')).not.toBe(encoded);
    expect(routeKey('GET /a', long).length).toBeLessThan(100);
  });

  it('escapes only what it must', () => {
    expect(encodeKeyPart('user:42')).toBe('user:42');
    expect(encodeKeyPart('2001:db8::/64')).toBe('2001:db8::/64');
    expect(encodeKeyPart('a%b{c}d|e#f\n')).toBe('a%25b%7Bc%7Dd%7Ce%23f%0A');
  });
});

describe('client addresses', () => {
  it.each([
    ['10.1.2.3', '10.1.2.3'],
    ['::ffff:10.1.2.3', '10.1.2.3'],
    ['::FFFF:192.168.0.1', '192.168.0.1'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2:0:0:0:0/64'],
    ['2001:db8:1:2::9', '2001:db8:1:2:0:0:0:0/64'],
    ['2001:db8:1:2:ffff::1', '2001:db8:1:2:0:0:0:0/64'],
    ['fe80::1%eth0', 'fe80:0:0:0:0:0:0:0/64'],
    ['::1', '0:0:0:0:0:0:0:0/64'],
    ['::', '0:0:0:0:0:0:0:0/64'],
    ['64:ff9b::10.1.2.3', '64:ff9b:0:0:0:0:0:0/64'],
    [undefined, UNKNOWN_IP],
    ['', UNKNOWN_IP],
    ['not-an-ip', UNKNOWN_IP],
    ['1.2.3.4, 5.6.7.8', UNKNOWN_IP],
  ])('%p becomes %p', (ip, expected) => {
    expect(normalizeIp(ip, 64)).toBe(expected);
  });

  it('groups IPv6 by a configurable prefix', () => {
    expect(normalizeIp('2001:db8:abcd:12ff::1', 56)).toBe('2001:db8:abcd:1200:0:0:0:0/56');
    expect(normalizeIp('2001:db8:abcd:12ff::1', 128)).toBe('2001:db8:abcd:12ff:0:0:0:1/128');
  });
});

describe('default tracker', () => {
  it('prefers req.user.id, then req.user.sub, then the IP, and keeps them apart', () => {
    expect(defaultTracker({ user: { id: 7, sub: 'x' }, ip: '1.2.3.4' }, 64)).toBe('user:7');
    expect(defaultTracker({ user: { sub: 'auth0|abc' }, ip: '1.2.3.4' }, 64)).toBe(
      'user:auth0|abc',
    );
    expect(defaultTracker({ user: { id: '' }, ip: '1.2.3.4' }, 64)).toBe('ip:1.2.3.4');
    expect(defaultTracker({ user: null, socket: { remoteAddress: '::ffff:9.9.9.9' } }, 64)).toBe(
      'ip:9.9.9.9',
    );
    expect(defaultTracker({ user: { id: '1.2.3.4' } }, 64)).not.toBe(
      defaultTracker({ ip: '1.2.3.4' }, 64),
    );
  });
});

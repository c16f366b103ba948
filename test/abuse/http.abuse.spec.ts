/**
 * Abuse over HTTP, through a real Nest app on Express: forged and malformed `X-Forwarded-For`,
 * IPv6 clients hopping addresses within their prefix, huge custom trackers, and concrete URLs
 * that try to dodge a route's limit.
 */
import { isIP } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import fc from 'fast-check';
import request from 'supertest';
import { type RateLimitRootOptions } from '../../lib/options/rate-limit.options.js';
import { STORE_KINDS, useRedis } from '../support/stores.js';
import { uniquePrefix } from '../contract/http/fixtures/app.js';
import { createAbuseApp, rawGetStatus, THRESHOLD } from './fixtures/app.js';

/** 200 for the first THRESHOLD requests, 429 after: what one shared limit answers. */
const sharedLimit = (n: number) => Array.from({ length: n }, (_, i) => (i < THRESHOLD ? 200 : 429));

/** Printable ASCII that no proxy-addr reading turns into an address, nor into "no address". */
const garbage = fc
  .string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 40 })
  .filter((s) => !s.includes(',') && s.trim() !== '' && isIP(s.trim()) === 0);

// Fixed seeds: a failing value comes back on the next run.
const FORGED = fc.sample(
  fc.oneof(
    fc.ipV4(),
    fc.ipV6(),
    fc.ipV4Extended(),
    garbage,
    fc
      .array(fc.oneof(fc.ipV4(), fc.ipV6()), { minLength: 2, maxLength: 4 })
      .map((a) => a.join(', ')),
  ),
  { numRuns: 40, seed: 7 },
);
const MALFORMED = [
  'not-an-ip',
  '999.1.1.1',
  '1.2.3',
  '::zz',
  '1.2.3.4.5',
  '01.2.3.4',
  '1.2.3.4:80',
  '[::1]',
  '2001:db8::g',
  '2001:db8:::1',
  'unknown',
  '{}|#%',
  'x'.repeat(8_000),
  `${'9'.repeat(4_000)}.1.1.1`,
  'garbage, 1.1.1.1',
  ...fc.sample(garbage, { numRuns: 20, seed: 11 }),
];

describe.each(STORE_KINDS)('abuse over HTTP on the %s store', (kind) => {
  const redis = useRedis(kind);
  const apps: INestApplication[] = [];

  async function app(options: RateLimitRootOptions = {}, trustProxy = false) {
    const created = await createAbuseApp(
      {
        keyPrefix: uniquePrefix(),
        ...(kind === 'redis' ? { redis: redis().url } : {}),
        ...options,
      },
      trustProxy,
    );
    apps.push(created);
    return created;
  }

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  /** Statuses of GETs sent one after another, each with its own X-Forwarded-For (or none). */
  async function forwarded(a: INestApplication, forwardedFor: Array<string | undefined>) {
    const out: number[] = [];
    for (const value of forwardedFor) {
      const req = request(a.getHttpServer()).get('/abuse/ip');
      if (value !== undefined) req.set('X-Forwarded-For', value);
      out.push((await req).status);
    }
    return out;
  }

  async function visit(a: INestApplication, paths: string[], headers: Record<string, string> = {}) {
    const out: number[] = [];
    for (const path of paths) {
      out.push(
        /[{}]/.test(path)
          ? await rawGetStatus(a, path)
          : (await request(a.getHttpServer()).get(path).set(headers)).status,
      );
    }
    return out;
  }

  describe('client addresses and proxies', () => {
    it(`without trust proxy, ${FORGED.length} forged X-Forwarded-For values all count against the real client`, async () => {
      const a = await app();
      expect(await forwarded(a, FORGED)).toEqual(sharedLimit(FORGED.length));
    });

    it(`with trust proxy, ${MALFORMED.length} different malformed X-Forwarded-For values share one bucket`, async () => {
      const a = await app({}, true);
      expect(await forwarded(a, MALFORMED)).toEqual(sharedLimit(MALFORMED.length));
      // That bucket is not the real client's, nor any real address's.
      expect(await forwarded(a, [undefined, '10.0.0.1'])).toEqual([200, 200]);
    });

    it('with trust proxy, an empty or blank X-Forwarded-For counts against the peer, like no header', async () => {
      const a = await app({}, true);
      // Express finds no address in these and falls back to the socket's: an existing bucket.
      expect(await forwarded(a, [undefined, '', ' ', ',', ' , '])).toEqual(sharedLimit(5));
    });

    it('with trust proxy, IPv6 clients in one /64 share a limit and another /64 has its own', async () => {
      const a = await app({}, true);
      const oneSubnet = [
        '2001:db8:0:1::1',
        '2001:db8:0:1:ffff:ffff:ffff:ffff',
        '2001:DB8:0:1::ABCD',
        '2001:db8:0:1:0:0:0:2',
        '2001:db8:0:1:8000::%eth0',
      ];
      expect(await forwarded(a, oneSubnet)).toEqual(sharedLimit(oneSubnet.length));
      expect(await forwarded(a, ['2001:db8:0:2::1', '2001:db8:1:1::1'])).toEqual([200, 200]);
    });

    it('with ipv6Subnet 48, addresses differing only in the 4th hextet share a limit', async () => {
      const a = await app({ ipv6Subnet: 48 }, true);
      const oneSubnet = [
        '2001:db8:1:aaaa::1',
        '2001:db8:1:bbbb::1',
        '2001:db8:1:cccc:1:2:3:4',
        '2001:db8:1:dddd::9',
      ];
      expect(await forwarded(a, oneSubnet)).toEqual(sharedLimit(oneSubnet.length));
      expect(await forwarded(a, ['2001:db8:2:aaaa::1'])).toEqual([200]);
    });

    it('with trust proxy, IPv4-mapped IPv6 addresses share with their IPv4 form', async () => {
      const a = await app({}, true);
      const one = ['1.2.3.4', '::ffff:1.2.3.4', '::FFFF:102:304', '0:0:0:0:0:ffff:1.2.3.4'];
      expect(await forwarded(a, one)).toEqual(sharedLimit(one.length));
      expect(await forwarded(a, ['1.2.3.5', '::ffff:1.2.3.5'])).toEqual([200, 200]);
    });

    it('a 10 KB getTracker result with braces and newlines is limited, and one character tells two apart', async () => {
      // 10,240 characters, six in ten of them escaped before the whole is hashed into the key.
      const big = '{user}\n|#%'.repeat(1_024);
      const a = await app({
        getTracker: (ctx) => {
          const variant = ctx.switchToHttp().getRequest<{ headers: Record<string, string> }>()
            .headers['x-variant'];
          return big + (variant ?? 'a');
        },
      });
      expect(await visit(a, Array(4).fill('/abuse/ip'))).toEqual(sharedLimit(4));
      expect(await visit(a, ['/abuse/ip'], { 'x-variant': 'b' })).toEqual([200]);
    });
  });

  describe('route patterns with odd characters', () => {
    it.each<[string, string[]]>([
      ['files{/:name}', ['/abuse/files', '/abuse/files/a', '/abuse/files/a%7Cb', '/abuse/files/z']],
      [
        'assets/*path',
        ['/abuse/assets/a', '/abuse/assets/a/b/c', '/abuse/assets/%7B%7D', '/abuse/assets/x'],
      ],
      [
        'colon/:id',
        ['/abuse/colon/1', '/abuse/colon/a:b', '/abuse/colon/%7D:0:sw', '/abuse/colon/2'],
      ],
      [
        'pair/:a-:b',
        ['/abuse/pair/1-2', '/abuse/pair/a-b', '/abuse/pair/%7C-%7B', '/abuse/pair/3-4'],
      ],
      [
        'lit\\{x\\}/:id',
        ['/abuse/lit{x}/1', '/abuse/lit{x}/2', '/abuse/lit{x}/%7B', '/abuse/lit{x}/3'],
      ],
    ])('%s: different URLs share one limit', async (_pattern, urls) => {
      const a = await app();
      expect(await visit(a, urls)).toEqual(sharedLimit(urls.length));
      // Still the route's own limit: another route is untouched.
      expect(await visit(a, ['/abuse/ip'])).toEqual([200]);
    });

    it('keeps the odd routes apart from each other', async () => {
      const a = await app();
      const routes = ['/abuse/files/a', '/abuse/assets/a', '/abuse/colon/a', '/abuse/pair/a-b'];
      const all = await visit(
        a,
        [...routes, '/abuse/lit{x}/a'].flatMap((r) => Array(THRESHOLD).fill(r)),
      );
      expect(all).toEqual(Array(THRESHOLD * 5).fill(200));
    });
  });
});

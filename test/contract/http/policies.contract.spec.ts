/** Several policies on one route, over HTTP through a real Nest app, on both stores. */
import { type Algorithm } from '../../../lib/algorithms/algorithm.js';
import { RATE_ALGORITHMS } from '../../../lib/algorithms/registry.js';
import { describe, expect, it } from '@jest/globals';
import { STORES_AND_ADAPTERS, uniqueUser } from './fixtures/app.js';
import {
  expectWait,
  limitOf,
  limitsOf,
  policiesOf,
  retryAfter,
  statusesOf,
  usePolicyApps,
} from './fixtures/policy-app.js';

describe.each(STORES_AND_ADAPTERS)(
  'several policies and every algorithm on the %s store over %s',
  (kind, adapter) => {
    const { app, series } = usePolicyApps(kind, adapter);

    it('array of policies: once the short one rejects, the long one keeps its remaining (all or nothing)', async () => {
      const a = await app();
      const user = uniqueUser();
      const responses = await series(a, '/multi/array', 6, user);

      expect(statusesOf(responses)).toEqual([200, 200, 200, 429, 429, 429]);
      expect(responses.map((r) => limitOf(r, 'short').r)).toEqual([2, 1, 0, 0, 0, 0]);
      // Three allowed requests took the long policy from 5 to 2; the rejected ones took nothing.
      expect(responses.map((r) => limitOf(r, 'long').r)).toEqual([4, 3, 2, 2, 2, 2]);
      for (const rejected of responses.slice(3)) {
        expect(rejected.body).toEqual({ statusCode: 429, message: 'Too Many Requests' });
        expectWait(retryAfter(rejected), 60);
      }
    });

    it('array of policies: the long policy rejects while the short one would allow, and the short one is not charged', async () => {
      const a = await app();
      const user = uniqueUser();
      const responses = await series(a, '/multi/long-tighter', 5, user);

      expect(statusesOf(responses)).toEqual([200, 200, 429, 429, 429]);
      expect(responses.map((r) => limitOf(r, 'long').r)).toEqual([1, 0, 0, 0, 0]);
      // The short policy still has 3 of 5 left: it would allow, yet nothing is counted against it.
      expect(responses.map((r) => limitOf(r, 'short').r)).toEqual([4, 3, 3, 3, 3]);
      // The wait is the long policy's: its window is an hour.
      expectWait(retryAfter(responses[2]), 3600);
    });

    it('two policies that resolve alike still keep their own counts: each request is counted once per policy', async () => {
      const a = await app();
      const responses = await series(a, '/multi/lookalike', 4, uniqueUser());
      expect(statusesOf(responses)).toEqual([200, 200, 200, 429]);
      expect(limitsOf(responses[1]).map((m) => m.r)).toEqual([1, 1]);
    });

    it('array of policies: RateLimit-Policy and RateLimit list both names in declaration order, with q and w', async () => {
      const a = await app();
      const user = uniqueUser();
      const [ok] = await series(a, '/multi/array', 1, user);
      expect(policiesOf(ok)).toEqual([
        { name: 'short', q: 3, w: 60 },
        { name: 'long', q: 5, w: 3600 },
      ]);
      expect(limitsOf(ok).map((m) => m.name)).toEqual(['short', 'long']);

      const [tighter] = await series(a, '/multi/long-tighter', 1, user);
      expect(policiesOf(tighter)).toEqual([
        { name: 'short', q: 5, w: 60 },
        { name: 'long', q: 2, w: 3600 },
      ]);
    });

    it('stacked decorators behave like the array [top, bottom]: same headers, same order, same decisions', async () => {
      const a = await app();
      const arrayUser = uniqueUser();
      const stackedUser = uniqueUser();
      const viaArray = await series(a, '/multi/array', 6, arrayUser);
      const viaStack = await series(a, '/multi/stacked', 6, stackedUser);

      expect(statusesOf(viaStack)).toEqual([200, 200, 200, 429, 429, 429]);
      expect(statusesOf(viaStack)).toEqual(statusesOf(viaArray));
      for (let i = 0; i < viaStack.length; i++) {
        expect(viaStack[i].headers['ratelimit-policy']).toBe(
          viaArray[i].headers['ratelimit-policy'],
        );
        expect(limitsOf(viaStack[i]).map(({ name, r }) => ({ name, r }))).toEqual(
          limitsOf(viaArray[i]).map(({ name, r }) => ({ name, r })),
        );
      }
      expect(policiesOf(viaStack[0])).toEqual([
        { name: 'short', q: 3, w: 60 },
        { name: 'long', q: 5, w: 3600 },
      ]);
      expect(viaStack.map((r) => limitOf(r, 'long').r)).toEqual([4, 3, 2, 2, 2, 2]);
    });

    it.each(['/retry/shorter-first', '/retry/longer-first'])(
      'Retry-After is the largest wait among the violated policies (%s)',
      async (path) => {
        const a = await app();
        const user = uniqueUser();
        const [first, rejected] = await series(a, path, 2, user);

        expect([first.status, rejected.status]).toEqual([200, 429]);
        const thirty = limitOf(rejected, 'thirty');
        const ninety = limitOf(rejected, 'ninety');
        // Both policies are exhausted: each would make the client wait out its own window.
        expect([thirty.r, ninety.r]).toEqual([0, 0]);
        expectWait(thirty.t, 30);
        expectWait(ninety.t, 90);
        expect(retryAfter(rejected)).toBe(Math.max(thirty.t, ninety.t));
        expect(retryAfter(rejected)).toBe(ninety.t);
      },
    );

    it('Retry-After ignores a policy that allows the request, however late it resets', async () => {
      const a = await app();
      const user = uniqueUser();
      const [first, rejected] = await series(a, '/retry/one-violated', 2, user);

      expect([first.status, rejected.status]).toEqual([200, 429]);
      const tight = limitOf(rejected, 'tight');
      const loose = limitOf(rejected, 'loose');
      expect(tight.r).toBe(0);
      expect(loose.r).toBe(99);
      expectWait(loose.t, 3600);
      expect(retryAfter(rejected)).toBe(tight.t);
      expectWait(retryAfter(rejected), 10);
    });

    it('names unnamed policies "<threshold>-per-<period>": "5-per-1s" and "1000-per-1h"', async () => {
      const a = await app();
      const [ok] = await series(a, '/names/defaults', 1, uniqueUser());

      expect(ok.status).toBe(200);
      expect(policiesOf(ok)).toEqual([
        { name: '5-per-1s', q: 5, w: 1 },
        { name: '1000-per-1h', q: 1000, w: 3600 },
      ]);
      expect(limitsOf(ok).map(({ name, r }) => ({ name, r }))).toEqual([
        { name: '5-per-1s', r: 4 },
        { name: '1000-per-1h', r: 999 },
      ]);
    });

    it.each<Algorithm>([...RATE_ALGORITHMS])(
      '%s: threshold 3 per 60 s gives 200, 200, 200, then 429 with Retry-After of at least 1 s',
      async (algorithm) => {
        const a = await app();
        const path = `/algorithms/${algorithm}`;
        let run = await series(a, path, 4, uniqueUser());
        // A fixed window is aligned to the clock: if a boundary fell inside the run (its reset time
        // went up), the count started again. Two boundaries are 60 s apart, so a rerun sees none.
        const resets = run.map((r) => limitsOf(r)[0].t as number);
        const windowChanged = resets.some((t, i) => i > 0 && t > resets[i - 1]);
        if (algorithm === 'fixed-window' && windowChanged)
          run = await series(a, path, 4, uniqueUser());

        expect(statusesOf(run)).toEqual([200, 200, 200, 429]);
        expect(run.map((r) => limitsOf(r)[0].r)).toEqual([2, 1, 0, 0]);
        expect(policiesOf(run[0])).toEqual([{ name: '3-per-1m', q: 3, w: 60 }]);
        const rejected = run[3];
        expect(rejected.body).toEqual({ statusCode: 429, message: 'Too Many Requests' });
        expect(Number.isInteger(retryAfter(rejected))).toBe(true);
        expect(retryAfter(rejected)).toBeGreaterThanOrEqual(1);
        // No algorithm ever asks for more than two windows.
        expect(retryAfter(rejected)).toBeLessThanOrEqual(120);
        for (const allowed of run.slice(0, 3))
          expect(allowed.headers['retry-after']).toBeUndefined();
      },
    );
  },
);

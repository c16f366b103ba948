/** Request cost and per-request (dynamic) policy values, over HTTP, on both stores. */
import { describe, expect, it } from '@jest/globals';
import { STORES_AND_ADAPTERS, uniqueUser } from './fixtures/app.js';
import { COST_TOO_HIGH_MESSAGE } from '../../../lib/rate-limit.exception.js';
import { COST_HEADER, PLAN_HEADER } from './fixtures/policy-controllers.js';
import {
  expectWait,
  limitsOf,
  policiesOf,
  retryAfter,
  statusesOf,
  usePolicyApps,
} from './fixtures/policy-app.js';

describe.each(STORES_AND_ADAPTERS)(
  'cost and dynamic values on the %s store over %s',
  (kind, adapter) => {
    const { app, get, series } = usePolicyApps(kind, adapter);

    it('cost 4 against threshold 10 allows two requests (4 + 4 = 8) and rejects the third (12 > 10)', async () => {
      const a = await app();
      const responses = await series(a, '/cost/fixed', 4, uniqueUser());

      expect(statusesOf(responses)).toEqual([200, 200, 429, 429]);
      expect(responses.map((r) => limitsOf(r)[0].r)).toEqual([6, 2, 2, 2]);
      expect(responses[2].body).toEqual({ statusCode: 429, message: 'Too Many Requests' });
      expectWait(retryAfter(responses[2]), 60);
    });

    it('a cost function of the context charges what the request says it costs', async () => {
      const a = await app();
      const user = uniqueUser();
      const withCost = (cost: number) =>
        get(a, '/cost/header', user, { [COST_HEADER]: String(cost) });

      const three = await withCost(3);
      const five = await withCost(5);
      const threeMore = await withCost(3);
      const two = await withCost(2);
      const one = await withCost(1);

      expect([three.status, five.status, threeMore.status, two.status, one.status]).toEqual([
        200, 200, 429, 200, 429,
      ]);
      expect([three, five, threeMore, two, one].map((r) => limitsOf(r)[0].r)).toEqual([
        7, 2, 2, 0, 0,
      ]);
      // Too expensive for now, but it would fit later: an ordinary 429 with a wait.
      expect(threeMore.body).toEqual({ statusCode: 429, message: 'Too Many Requests' });
      expect(retryAfter(threeMore)).toBeGreaterThanOrEqual(1);
    });

    it('a cost above the threshold gets 429 "Request cost exceeds the rate limit", no Retry-After, and consumes nothing', async () => {
      const a = await app();
      const user = uniqueUser();
      const tooCostly = await get(a, '/cost/header', user, { [COST_HEADER]: '11' });

      expect(tooCostly.status).toBe(429);
      expect(tooCostly.body).toEqual({ statusCode: 429, message: COST_TOO_HIGH_MESSAGE });
      expect(COST_TOO_HIGH_MESSAGE).toBe('Request cost exceeds the rate limit');
      expect(tooCostly.headers['retry-after']).toBeUndefined();
      expect(limitsOf(tooCostly)[0].r).toBe(10);

      const cheap = await get(a, '/cost/header', user, { [COST_HEADER]: '1' });
      expect(cheap.status).toBe(200);
      expect(limitsOf(cheap)[0].r).toBe(9);

      // Also once some quota is used: the remaining stays where it was.
      const again = await get(a, '/cost/header', user, { [COST_HEADER]: '1000' });
      expect(again.status).toBe(429);
      expect(again.body).toEqual({ statusCode: 429, message: COST_TOO_HIGH_MESSAGE });
      expect(again.headers['retry-after']).toBeUndefined();
      expect(limitsOf(again)[0].r).toBe(9);
      const last = await get(a, '/cost/header', user, { [COST_HEADER]: '9' });
      expect(last.status).toBe(200);
      expect(limitsOf(last)[0].r).toBe(0);
    });

    it('a dynamic threshold follows the plan: free users get 2, pro users 5, and q says which', async () => {
      const a = await app();
      const free = await series(a, '/plan/threshold', 4, uniqueUser(), { [PLAN_HEADER]: 'free' });
      const pro = await series(a, '/plan/threshold', 7, uniqueUser(), { [PLAN_HEADER]: 'pro' });

      expect(statusesOf(free)).toEqual([200, 200, 429, 429]);
      expect(statusesOf(pro)).toEqual([200, 200, 200, 200, 200, 429, 429]);
      for (const res of free) expect(policiesOf(res)).toEqual([{ name: '2-per-1m', q: 2, w: 60 }]);
      for (const res of pro) expect(policiesOf(res)).toEqual([{ name: '5-per-1m', q: 5, w: 60 }]);
      expect(free.map((r) => limitsOf(r)[0].r)).toEqual([1, 0, 0, 0]);
      expect(pro.map((r) => limitsOf(r)[0].r)).toEqual([4, 3, 2, 1, 0, 0, 0]);
    });

    it('an async dynamic period follows the plan: free users wait out 2 minutes, pro users 10 s', async () => {
      const a = await app();
      const free = await series(a, '/plan/period', 2, uniqueUser());
      const pro = await series(a, '/plan/period', 2, uniqueUser(), { [PLAN_HEADER]: 'pro' });

      expect(statusesOf(free)).toEqual([200, 429]);
      expect(statusesOf(pro)).toEqual([200, 429]);
      expect(policiesOf(free[0])).toEqual([{ name: '1-per-2m', q: 1, w: 120 }]);
      expect(policiesOf(pro[0])).toEqual([{ name: '1-per-10s', q: 1, w: 10 }]);
      expectWait(retryAfter(free[1]), 120);
      expectWait(retryAfter(pro[1]), 10);
    });

    it('a dynamic threshold that returns nothing gets the default threshold, 3', async () => {
      const a = await app();
      const responses = await series(a, '/nothing/threshold', 4, uniqueUser());

      expect(statusesOf(responses)).toEqual([200, 200, 200, 429]);
      expect(policiesOf(responses[0])).toEqual([{ name: 'plan', q: 3, w: 60 }]);
      expect(responses.map((r) => limitsOf(r)[0].r)).toEqual([2, 1, 0, 0]);
    });

    it('an async dynamic period that returns nothing gets the default period, 60 s', async () => {
      const a = await app();
      const responses = await series(a, '/nothing/period', 2, uniqueUser());

      expect(statusesOf(responses)).toEqual([200, 429]);
      expect(policiesOf(responses[0])).toEqual([{ name: 'plan', q: 1, w: 60 }]);
      expectWait(retryAfter(responses[1]), 60);
    });

    it.each(['/nothing/cost', '/nothing/cost-async'])(
      'a dynamic cost that returns nothing costs the default, 1: %s',
      async (path) => {
        const a = await app();
        const responses = await series(a, path, 3, uniqueUser());

        expect(statusesOf(responses)).toEqual([200, 200, 429]);
        expect(responses.map((r) => limitsOf(r)[0].r)).toEqual([1, 0, 0]);
      },
    );

    it.each([
      '/invalid/threshold-zero',
      '/invalid/threshold-negative',
      '/invalid/threshold-nan',
      '/invalid/threshold-fraction',
      '/invalid/threshold-throws',
      '/invalid/threshold-async-zero',
      '/invalid/period-zero',
      '/invalid/cost-zero',
    ])(
      'an invalid dynamic value never means unlimited: %s answers 500 every time',
      async (path) => {
        const a = await app();
        const user = uniqueUser();
        const responses = await series(a, path, 6, user);

        expect(statusesOf(responses)).toEqual([500, 500, 500, 500, 500, 500]);
        for (const res of responses) {
          expect(res.body).toEqual({ statusCode: 500, message: 'Internal server error' });
          expect(res.text).not.toContain('unlimited');
        }
      },
    );
  },
);

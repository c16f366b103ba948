/**
 * The console's page in headless Chromium, on two instances sharing one Redis: a flood on A shows
 * first on B's page; blocking from B's page makes A turn the caller away for the block's time, and
 * lifting it lets the caller through; an override set from B's page is applied by A; and without
 * the guard's credentials the page shows nothing but the refusal. On a 3-master cluster, the page
 * lists each master, and shows the one frozen (SIGSTOP) as failing while the others stay up.
 *
 * Needs Chromium (Debian's `chromium`, or CHROMIUM_PATH); the full tier alone runs it. With
 * CONSOLE_SCREENSHOT=<file>, the page during the flood is saved there (docs/console.png).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import {
  type CanActivate,
  type ExecutionContext,
  type INestApplication,
  Injectable,
  UnauthorizedException,
} from '@nestjs/common';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import request from 'supertest';
import { RateLimitModule, type RedisConnection } from '../../lib/index.js';
import { RateLimitConsoleModule } from '../../lib/console/index.js';
import { uniquePrefix, uniqueUser } from '../contract/http/fixtures/app.js';
import { startHttpApp, USER_HEADER } from '../contract/http/fixtures/http-app.js';
import { OverrideController } from '../contract/http/fixtures/override-controllers.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { REDIS_DECIDES_MS, useCluster } from '../support/stores.js';
import { waitFor } from '../support/wait-for.js';

// What the page's elements are read as, typed here: the DOM library stays out of the project.
interface Shown {
  readonly innerText: string;
}
declare const document: { readonly body: Shown };

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const TOKEN = 'on-call';
const BASIC = 'Basic ' + Buffer.from(`admin:${TOKEN}`).toString('base64');

/** HTTP Basic with one admin token, as docs/console.md shows it. */
@Injectable()
class AdminGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const http = context.switchToHttp();
    if (http.getRequest<{ headers: Record<string, string> }>().headers.authorization === BASIC) {
      return true;
    }
    http
      .getResponse<{ header(name: string, value: string): void }>()
      .header('WWW-Authenticate', 'Basic realm="rate limits"');
    throw new UnauthorizedException();
  }
}

describe('the console in a browser, on two instances sharing one Redis', () => {
  let redis: TestRedis;
  let browser: Browser;
  let a: INestApplication;
  let b: INestApplication;
  let pageB: Page;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(
        `No Chromium at ${CHROMIUM}: install it (apt-get install chromium) or set CHROMIUM_PATH`,
      );
    }
    redis = await startRedis();
    const keyPrefix = uniquePrefix();
    const app = (adapter: 'express' | 'fastify') =>
      startHttpApp(
        {
          imports: [
            RateLimitModule.forRoot({ keyPrefix, redis: redis.url, timeout: REDIS_DECIDES_MS }),
            RateLimitConsoleModule.forRoot({ guard: AdminGuard }),
          ],
          controllers: [OverrideController],
        },
        { adapter },
      );
    [a, b] = await Promise.all([app('express'), app('fastify')]);
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
    pageB = await browser.newPage();
    await pageB.setViewport({ width: 1240, height: 1100 });
    await pageB.authenticate({ username: 'admin', password: TOKEN });
  });

  afterAll(async () => {
    await browser?.close();
    await Promise.all([a?.close(), b?.close()]);
    await redis?.stop();
  });

  const call = (app: INestApplication, user: string) =>
    request(app.getHttpServer()).get('/ov/api').set(USER_HEADER, user);
  const urlOf = async (app: INestApplication) => `${await app.getUrl()}/rate-limits`;
  const rowTexts = (page: Page, selector: string) =>
    page.$$eval(`${selector} tr`, (rows) => rows.map((r) => (r as unknown as Shown).innerText));

  it('shows the tracker flooding A first on B’s page', async () => {
    const flooder = uniqueUser();
    for (let i = 0; i < 12; i++) await call(a, flooder);
    for (let i = 0; i < 4; i++) await call(a, uniqueUser());
    const response = await pageB.goto(await urlOf(b));
    expect(response?.status()).toBe(200);

    const started = Date.now();
    await waitFor('the flooder first on B’s page', 15_000, async () => {
      const [first] = await rowTexts(pageB, '#top');
      return (
        (first?.startsWith(`user:${flooder}`) && first.includes('\t9')) || `first row: ${first}`
      );
    });
    console.log(`B's page listed A's flooder ${Date.now() - started} ms after it opened`);
    const [first] = await rowTexts(pageB, '#top');
    expect(first.split('\t').slice(0, 4)).toEqual([`user:${flooder}`, 'GET /ov/api', 'api', '9']);
    expect(await pageB.$eval('#reach', (e) => e.textContent)).toBe('every instance');
    const screenshot = process.env.CONSOLE_SCREENSHOT;
    if (screenshot !== undefined) await pageB.screenshot({ path: screenshot, fullPage: true });
  });

  it('blocks a caller from B’s page, which A turns away for the block’s time, and lifts it', async () => {
    const caller = uniqueUser();
    expect((await call(a, caller)).status).toBe(200);
    await pageB.goto(await urlOf(b));
    await pageB.type('#tracker', `user:${caller}`);
    await pageB.click('#lookup-form button');
    await pageB.waitForSelector('#block-duration');
    await pageB.$eval(
      '#block-duration',
      (input) => ((input as unknown as { value: string }).value = ''),
    );
    await pageB.type('#block-duration', '10m');
    await clickButton(pageB, '#tracker-view', 'Block');
    await waitFor('the block on the page', 10_000, async () => {
      const message = await pageB.$eval('#message', (e) => e.textContent);
      return message === `Blocked user:${caller} for 10m` || `message: ${message}`;
    });

    // Turned away for the block's ten minutes, not for the minute of its quota (2 of 3 left).
    const blocked = await call(a, caller);
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(540);
    await waitFor('the block in the tracker view', 10_000, async () => {
      const rows = await rowTexts(pageB, '#tracker-view tbody');
      return (
        rows.some((r) => r.startsWith('GET /ov/api\tapi') && /\t(9|10) min$/.test(r)) ||
        rows.join(' | ')
      );
    });

    await clickButton(pageB, '#tracker-view', 'Lift block');
    await waitFor('the lift on the page', 10_000, async () => {
      const message = await pageB.$eval('#message', (e) => e.textContent);
      return message === `Lifted the block of user:${caller}` || `message: ${message}`;
    });
    await waitFor('A letting the caller through', 10_000, async () => {
      const status = (await call(a, caller)).status;
      return status === 200 || `status ${status}`;
    });
  });

  it('sets an override from B’s page, which A applies', async () => {
    await pageB.goto(await urlOf(b));
    await pageB.type('#o-policy', 'api');
    await pageB.type('#o-threshold', '7');
    await pageB.type('#o-ttl', '1h');
    await pageB.click('#override-form button');
    const started = Date.now();
    await waitFor('A applying the override', 10_000, async () => {
      const policy = (await call(a, uniqueUser())).headers['ratelimit-policy'];
      return /"api";q=7;/.test(String(policy)) || `RateLimit-Policy: ${policy}`;
    });
    console.log(`A applied the override ${Date.now() - started} ms after it was set on B's page`);
    await waitFor('the override listed', 10_000, async () => {
      const rows = await rowTexts(pageB, '#overrides');
      return rows.some((r) => r.startsWith('api\tevery tracker\t7')) || rows.join(' | ');
    });
  });

  it('shows nothing but the refusal without the guard’s credentials', async () => {
    const context = await browser.createBrowserContext();
    try {
      const page = await context.newPage();
      // Chromium asks for credentials on a 401 with WWW-Authenticate: these are wrong.
      await page.authenticate({ username: 'admin', password: 'guess' });
      const response = await page.goto(await urlOf(b));
      expect(response?.status()).toBe(401);
      const text = await page.evaluate(() => document.body.innerText);
      expect(text).not.toMatch(/tracker|override|Decisions|api\b/i);
      expect(await page.$('#top')).toBeNull();
      const api = await page.evaluate(async () => (await fetch('rate-limits/api/top')).status);
      expect(api).toBe(401);
    } finally {
      await context.close();
    }
  });
});

describe('the console in a browser, on a 3-master cluster', () => {
  const cluster = useCluster({
    replicas: 0,
    own: true,
    // Without it, the masters left would refuse every command once one is flagged failed.
    nodeArgs: ['--cluster-require-full-coverage', 'no'],
  });
  let browser: Browser;
  let app: INestApplication;

  beforeAll(async () => {
    const client = await cluster().connect('ioredis');
    app = await startHttpApp({
      imports: [
        RateLimitModule.forRoot({ redis: client as RedisConnection, timeout: 300 }),
        RateLimitConsoleModule.forRoot({ guard: AdminGuard }),
      ],
      controllers: [OverrideController],
    });
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
  });

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  /** One decision for each of 30 callers: their keys land on every master. */
  const spread = () =>
    Promise.all(
      Array.from({ length: 30 }, () =>
        request(app.getHttpServer()).get('/ov/api').set(USER_HEADER, uniqueUser()),
      ),
    );
  const nodeRows = (page: Page) =>
    page.$$eval('#nodes tbody tr', (rows) => rows.map((r) => (r as unknown as Shown).innerText));
  const portOf = (row: string) => Number(/:(\d+)\t/.exec(row)?.[1]);

  it('lists each master, and shows a frozen one failing while the others stay up', async () => {
    const masters = await cluster().masters();
    await spread();
    const page = await browser.newPage();
    await page.authenticate({ username: 'admin', password: TOKEN });
    await page.goto(`${await app.getUrl()}/rate-limits`);
    await waitFor('a row per master', 10_000, async () => {
      const rows = await nodeRows(page);
      const up = rows.filter((r) => /\tup\t/.test(r)).map(portOf);
      return (
        up.sort().join() ===
          masters
            .map((m) => m.port)
            .sort()
            .join() || rows.join(' | ')
      );
    });

    const [victim] = masters;
    const node = cluster().nodes.find((n) => n.port === victim.port)!;
    node.freeze(true);
    try {
      await spread();
      await waitFor('the frozen master failing on the page', 10_000, async () => {
        const rows = await nodeRows(page);
        const failing = rows.filter((r) => /\tfailing\t/.test(r)).map(portOf);
        const up = rows.filter((r) => /\tup\t/.test(r)).map(portOf);
        const others = masters.filter((m) => m !== victim).map((m) => m.port);
        const seen =
          failing.join() === String(victim.port) && up.sort().join() === others.sort().join();
        return seen || rows.join(' | ');
      });
    } finally {
      node.freeze(false);
    }
    await page.close();
  }, 60_000);
});

/** Clicks the button labelled `label` inside `within`. */
async function clickButton(page: Page, within: string, label: string): Promise<void> {
  const clicked = await page.$$eval(
    `${within} button`,
    (buttons, wanted) => {
      const button = buttons.find((b) => b.textContent === wanted) as unknown as
        { click(): void } | undefined;
      button?.click();
      return button !== undefined;
    },
    label,
  );
  if (!clicked) throw new Error(`no button "${label}" in ${within}`);
}

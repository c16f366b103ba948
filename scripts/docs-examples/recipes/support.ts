// What every recipe scenario shares: how its app is started on each adapter, how it is called,
// and the run that prints recipe × adapter × module system, pass or fail.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { type INestApplication, type INestApplicationContext, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { type ClientProxy, ClientProxyFactory, Transport } from '@nestjs/microservices';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';

export { assert };

export type Adapter = 'express' | 'fastify';

/** A recipe served over HTTP (or a socket on the HTTP server), run on each of its adapters. */
export interface HttpScenario {
  kind: 'http';
  /** Both unless the recipe is known to work on one only (and its page says so). */
  adapters?: readonly Adapter[];
  module: Type;
  run(http: Http, app: INestApplication): Promise<void>;
}

/** A microservice recipe, over TCP: no HTTP adapter takes part. */
export interface TcpScenario {
  kind: 'tcp';
  module: Type;
  run(client: ClientProxy): Promise<void>;
}

/** A recipe of providers called from code (a queue consumer, a cron job): no transport at all. */
export interface ProviderScenario {
  kind: 'providers';
  module: Type;
  run(app: INestApplicationContext): Promise<void>;
}

export type Scenario = HttpScenario | TcpScenario | ProviderScenario;

export interface Reply {
  status: number;
  headers: Headers;
  body: unknown;
}

/** Real HTTP calls to the app under test. */
export class Http {
  constructor(readonly base: string) {}

  async request(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) {
    const response = await fetch(`${this.base}${path}`, {
      method,
      headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      // A body that is not JSON (the metrics text) is kept as text.
    }
    return { status: response.status, headers: response.headers, body: parsed } satisfies Reply;
  }

  get(path: string, headers?: Record<string, string>) {
    return this.request('GET', path, undefined, headers);
  }

  post(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.request('POST', path, body ?? {}, headers);
  }
}

/** How many of `replies` have each status, e.g. `{ 200: 5, 429: 1 }`. */
export function statuses(replies: readonly Reply[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const { status } of replies) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}

/** `n` calls of `call` at once. */
export function atOnce<T>(n: number, call: (i: number) => Promise<T>): Promise<T[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => call(i)));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function runHttp(scenario: HttpScenario, adapter: Adapter) {
  const app = await NestFactory.create(
    scenario.module,
    adapter === 'express' ? new ExpressAdapter() : new FastifyAdapter(),
    { logger: ['error'] },
  );
  try {
    await app.listen(0, '127.0.0.1');
    await scenario.run(new Http(await app.getUrl()), app);
  } finally {
    await app.close();
  }
}

async function runTcp(scenario: TcpScenario) {
  const port = await freePort();
  const options = { host: '127.0.0.1', port };
  const app = await NestFactory.createMicroservice(scenario.module, {
    transport: Transport.TCP,
    options,
    logger: ['error'],
  });
  await app.listen();
  const client = ClientProxyFactory.create({ transport: Transport.TCP, options });
  try {
    await client.connect();
    await scenario.run(client);
  } finally {
    await client.close();
    await app.close();
  }
}

async function runProviders(scenario: ProviderScenario) {
  const app = await NestFactory.createApplicationContext(scenario.module, { logger: ['error'] });
  try {
    await scenario.run(app);
  } finally {
    await app.close();
  }
}

/** Where a scenario runs: its adapters, or the one place that needs none. */
function placesOf(scenario: Scenario): string[] {
  if (scenario.kind === 'tcp') return ['tcp (no HTTP adapter)'];
  if (scenario.kind === 'providers') return ['providers (no transport)'];
  return [...(scenario.adapters ?? ['express', 'fastify'])];
}

function runAt(scenario: Scenario, place: string): Promise<void> {
  if (scenario.kind === 'tcp') return runTcp(scenario);
  if (scenario.kind === 'providers') return runProviders(scenario);
  return runHttp(scenario, place as Adapter);
}

const TIMEOUT_MS = 60_000;

/**
 * Runs every scenario at each of its places, printing one line each; exits 1 on any failure.
 * Each comes with its name and where its blocks are in the docs.
 */
export async function runScenarios(scenarios: readonly [string, Scenario, string][]) {
  const system = process.argv[2] ?? '?';
  let failed = 0;
  let ran = 0;
  for (const [name, scenario, blocks] of scenarios) {
    for (const place of placesOf(scenario)) {
      const started = Date.now();
      const label = `${name} × ${place} × ${system}`;
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          runAt(scenario, place),
          new Promise((_, reject) => {
            timer = setTimeout(
              () => reject(new Error(`no end after ${TIMEOUT_MS} ms`)),
              TIMEOUT_MS,
            );
          }),
        ]);
        console.log(`  pass  ${label} (${Date.now() - started} ms)`);
      } catch (error) {
        failed++;
        console.log(`  FAIL  ${label} (${Date.now() - started} ms), the recipe at ${blocks}`);
        console.log(
          `        ${String((error as Error)?.stack ?? error).replace(/\n/g, '\n        ')}`,
        );
      } finally {
        clearTimeout(timer);
      }
      ran++;
    }
  }
  console.log(`  ${ran - failed} of ${ran} passed as ${system}`);
  // A recipe that leaves a timer or socket behind must not hold the check open.
  process.exit(failed > 0 ? 1 : 0);
}

/**
 * The app's authentication, as middleware before the guard: `X-User: id/plan` becomes
 * `req.user = { id, plan }`. On Fastify, middleware is handed the raw request, where the recipes
 * say the user then is.
 */
export function authenticate(
  req: { headers: Record<string, string | string[] | undefined>; user?: unknown },
  _res: unknown,
  next: () => void,
) {
  const header = req.headers['x-user'];
  if (typeof header === 'string') {
    const [id, plan] = header.split('/');
    req.user = { id, plan };
  }
  next();
}

/**
 * Asserts that calls booked together from `askedAt` (ms, `performance.now()`) started each in
 * its own slot, `intervalMs` apart, none before it: the k-th (in order of start) not before
 * `askedAt + k × intervalMs`, less 1 ms for timer rounding.
 */
export function assertSpaced(startedAt: readonly number[], askedAt: number, intervalMs: number) {
  const starts = [...startedAt].sort((a, b) => a - b);
  starts.forEach((at, k) =>
    assert.ok(
      at >= askedAt + k * intervalMs - 1,
      `call ${k + 1} started ${(at - askedAt).toFixed(1)} ms after the ask, before its slot at ${k * intervalMs} ms`,
    ),
  );
}

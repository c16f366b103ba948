// CI: the README's quick start, copied as written into a fresh Nest 12 app that installs the
// packed tarball, then run the way a team's first day goes: with Redis up, with Redis killed under
// traffic, and booted while Redis is down. Once with the quick start's own module (ioredis from
// REDIS_URL), once with the README's node-redis factory in its place.
//
//   node .ci/readme-app.mjs <scratch dir> <tarball file name in it>
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

const [scratch, tarball] = process.argv.slice(2);
const root = join(import.meta.dirname, '..');
const dir = join(scratch, 'readme-app');
const children = new Set();
process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));

/** The ts blocks of the README's `## Quick start`, each with its hidden prelude, if any. */
function quickStartBlocks() {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const start = readme.indexOf('## Quick start\n');
  const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
  const blocks = [];
  const fence = /(?:<!-- ts-prelude\n([\s\S]*?)-->\s*\n)?```ts\n([\s\S]*?)```/g;
  for (const [, prelude = '', code] of section.matchAll(fence)) blocks.push(prelude + code);
  return blocks;
}

const blocks = quickStartBlocks();
const quickStart = blocks.find((b) => b.includes('class HelloController'));
const nodeRedis = blocks.find((b) => b.includes("from 'redis'"));
if (!quickStart || !nodeRedis) {
  throw new Error("README's quick start lacks the controllers' block or the node-redis block");
}

mkdirSync(join(dir, 'src'), { recursive: true });
writeFileSync(join(dir, 'src/quick-start.ts'), quickStart);
writeFileSync(join(dir, 'src/node-redis.module.ts'), nodeRedis);
writeFileSync(
  join(dir, 'src/main.ts'),
  `import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule, HelloController, ItemsController } from './quick-start.js';
import { AppModule as NodeRedisModule } from './node-redis.module.js';

// The node-redis variant: the README's factory module, with the quick start's controllers.
@Module({ imports: [NodeRedisModule], controllers: [HelloController, ItemsController] })
class NodeRedisApp {}

const app = await NestFactory.create(process.env.CLIENT === 'node-redis' ? NodeRedisApp : AppModule);
await app.listen(Number(process.env.PORT), '127.0.0.1');
console.log('listening');
`,
);
writeFileSync(
  join(dir, 'package.json'),
  JSON.stringify(
    {
      name: 'readme-app',
      private: true,
      type: 'module',
      dependencies: {
        '@nestjs/common': '^12.0.0',
        '@nestjs/core': '^12.0.0',
        '@nestjs/platform-express': '^12.0.0',
        '@types/node': '^20.0.0',
        ioredis: '^6.0.0',
        'nest-rate-limit': `file:../${tarball}`,
        redis: '^6.0.0',
        'reflect-metadata': '^0.2.0',
        rxjs: '^7.8.0',
      },
    },
    null,
    2,
  ),
);
writeFileSync(
  join(dir, 'tsconfig.json'),
  JSON.stringify({
    compilerOptions: {
      target: 'ES2022',
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      strict: true,
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
      skipLibCheck: true,
      types: ['node'],
      outDir: 'dist',
    },
    include: ['src'],
  }),
);
execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], {
  cwd: dir,
  stdio: 'inherit',
});
execFileSync(join(root, 'node_modules/.bin/tsc'), ['-p', dir], { stdio: 'inherit' });

function freePort() {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function startRedis(port) {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  );
  children.add(child);
  return child;
}

async function redisKeys(port) {
  return execFileSync('redis-cli', ['-p', String(port), '--scan'], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean);
}

async function waitForRedis(port) {
  for (let i = 0; i < 100; i++) {
    try {
      const options = { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] };
      if (execFileSync('redis-cli', ['-p', String(port), 'ping'], options).trim() === 'PONG')
        return;
    } catch {
      /* not up yet */
    }
    await sleep(100);
  }
  throw new Error(`redis-server on ${port} did not start`);
}

/** Starts the app; resolves once it listens, and fails if it exits at any time after. */
async function startApp(client, redisPort) {
  const port = await freePort();
  const env = { ...process.env, CLIENT: client, PORT: String(port), NO_COLOR: '1' };
  env.REDIS_URL = `redis://127.0.0.1:${redisPort}`;
  const child = spawn(process.execPath, ['dist/main.js'], { cwd: dir, env });
  children.add(child);
  const app = { child, port, log: [], exited: false };
  child.stdout.on('data', (d) => app.log.push(String(d)));
  child.stderr.on('data', (d) => app.log.push(String(d)));
  child.on('exit', (code, signal) =>
    Object.assign(app, { exited: true, exit: `${code ?? signal}` }),
  );
  const deadline = Date.now() + 15_000;
  while (!app.log.join('').includes('listening')) {
    if (app.exited || Date.now() > deadline) fail(app, 'did not start listening within 15 s');
    await sleep(50);
  }
  return app;
}

function fail(app, why) {
  console.error(app.log.join(''));
  throw new Error(`the README app ${why}${app.exited ? ` (it exited: ${app.exit})` : ''}`);
}

async function statuses(app, path, n) {
  const codes = [];
  for (let i = 0; i < n; i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${app.port}${path}`);
      await res.text();
      codes.push(res.status);
    } catch (error) {
      fail(app, `did not answer ${path}: ${error.message}`);
    }
  }
  if (app.exited) fail(app, 'crashed');
  return codes;
}

function expect(app, what, ok, codes) {
  console.log(`  ${what}: ${codes.join(', ')}`);
  if (!ok) fail(app, `${what}: unexpected statuses`);
}

/** Polls a route until the app's keys are in Redis again: its limits are shared. */
async function expectShared(app, redisPort, what) {
  const deadline = Date.now() + 20_000;
  for (let id = 0; ; id++) {
    await statuses(app, `/items/${id}`, 1);
    if ((await redisKeys(redisPort)).length > 0) break;
    if (Date.now() > deadline) fail(app, `${what}: no key reached Redis within 20 s`);
    await sleep(250);
  }
  console.log(`  ${what}: keys in Redis again`);
}

for (const client of ['ioredis', 'node-redis']) {
  console.log(`README quick start, ${client}`);
  const redisPort = await freePort();
  let redis = startRedis(redisPort);
  await waitForRedis(redisPort);

  let app = await startApp(client, redisPort);
  let codes = await statuses(app, '/hello/sayHi', 3);
  expect(app, 'Redis up, GET /hello/sayHi x3', codes.join() === '200,200,429', codes);
  if ((await redisKeys(redisPort)).length === 0) fail(app, 'left no key in Redis');

  // An outage under traffic: every request answered by the fallback, and no crash.
  const traffic = statuses(app, '/items/1', 40);
  await sleep(20);
  redis.kill('SIGKILL');
  codes = await traffic;
  codes.push(...(await statuses(app, '/items/2', 5)));
  await sleep(1000);
  codes.push(...(await statuses(app, '/items/3', 5)));
  expect(
    app,
    'Redis killed under traffic',
    codes.every((c) => c === 200 || c === 429),
    codes,
  );

  redis = startRedis(redisPort);
  await waitForRedis(redisPort);
  await expectShared(app, redisPort, 'Redis restarted');
  app.child.kill('SIGTERM');
  redis.kill('SIGKILL');

  // Boot with Redis down: the app starts and serves on the fallback, then shares once it is up.
  const downPort = await freePort();
  app = await startApp(client, downPort);
  codes = await statuses(app, '/hello/sayHi', 3);
  expect(app, 'booted with Redis down, GET /hello/sayHi x3', codes.join() === '200,200,429', codes);
  redis = startRedis(downPort);
  await waitForRedis(downPort);
  await expectShared(app, downPort, 'Redis started after boot');
  app.child.kill('SIGTERM');
  redis.kill('SIGKILL');
}
console.log("The README's quick start survives an outage and boots without Redis, on both clients");
process.exit(0);

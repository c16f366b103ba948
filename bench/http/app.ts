/**
 * The benchmark's server, run as a child process so that it does not share an event loop with
 * the load generator. Configured by environment:
 *   BENCH_ADAPTER=express|fastify  BENCH_CONFIG=<one of CONFIGS>  BENCH_REDIS_URL=redis://…
 * Prints `listening <port>` once it accepts connections (port 0: the OS picks a free one), and
 * `degraded <n>` when it stops.
 */
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { benchModule, degraded } from './app-module.js';
import { ADAPTERS, type Adapter, type Config, CONFIGS } from './workload.js';

function oneOf<T extends string>(name: string, allowed: readonly T[]): T {
  const value = process.env[name];
  if (!allowed.includes(value as T)) {
    throw new Error(`${name} must be one of ${allowed.join(', ')}; got ${String(value)}`);
  }
  return value as T;
}

const adapter: Adapter = oneOf('BENCH_ADAPTER', ADAPTERS);
const config: Config = oneOf('BENCH_CONFIG', CONFIGS);
const redisUrl = process.env.BENCH_REDIS_URL ?? '';
if (config.includes('Redis') && !redisUrl)
  throw new Error(`BENCH_REDIS_URL is needed for ${config}`);

function stop(): never {
  // Written synchronously (stdout is a pipe), so the parent reads it before the exit.
  process.stdout.write(`degraded ${degraded.count}\n`);
  // process.exit, not a signal death, so that --cpu-prof still writes its profile.
  process.exit(0);
}
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
// The parent holds our stdin open; when it dies, however it dies, we stop too.
process.stdin.on('end', stop).on('close', stop).resume();

const app = await NestFactory.create(
  benchModule(config, redisUrl),
  adapter === 'fastify' ? new FastifyAdapter() : new ExpressAdapter(),
  { logger: false },
);
await app.listen(Number(process.env.BENCH_PORT ?? 0), '127.0.0.1');
const { port } = app.getHttpServer().address() as { port: number };
process.stdout.write(`listening ${port}\n`);

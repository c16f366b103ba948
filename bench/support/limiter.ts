/** What every contender looks like to a section: one decision at a time on its own Redis client. */
import { Redis } from 'ioredis';
import { createClient, type RedisClientType } from 'redis';

/** The client libraries a contender can run on; GLIDE and iovalkey only on the Valkey rows. */
export type Library = 'ioredis' | 'node-redis' | 'iovalkey' | 'glide';
/** The libraries whose rows run on Redis, each with the whole set of contenders. */
export const LIBRARIES: readonly Library[] = ['ioredis', 'node-redis'];

/** A node-redis client (v6), as `createClient({ url }).connect()` gives it. */
export type NodeRedis = RedisClientType;

/** One limit, the same for every contender of a run. */
export interface Limit {
  readonly threshold: number;
  readonly periodMs: number;
}

export interface Limiter {
  /** Its own client, default options unless the row says otherwise, of the row's library. */
  readonly client: unknown;
  /** Counts one request against `key`; resolves to whether it was allowed. */
  decide(key: string): Promise<boolean>;
  /** Text that appears in a command's arguments exactly when the command concerns `key`. */
  redisKeyMarker(key: string): string;
  /** Decisions answered without Redis because it failed or was too slow (ours only). */
  degraded(): number;
  close(): Promise<void>;
}

export const neverDegraded = () => 0;

/**
 * The limiter's ioredis client, for sections that wrap its `sendCommand` to count calls: a
 * node-redis client has no such hook, so those sections run on ioredis only.
 */
export function ioredisClient(limiter: Limiter): Redis {
  if (limiter.client instanceof Redis) return limiter.client;
  throw new Error('this section counts Redis calls on ioredis clients only');
}

/** Quits politely, or drops the connection if it is already broken; either library. */
export async function closeClient(client: Redis | NodeRedis): Promise<void> {
  if (client instanceof Redis) await client.quit().catch(() => client.disconnect());
  else if (client.isOpen) await client.close().catch(() => client.destroy());
}

/** A connected node-redis client with the library's defaults. */
export async function connectNodeRedis(url: string): Promise<NodeRedis> {
  const client: NodeRedis = createClient({ url });
  // Without a listener node-redis throws its 'error' events, ending the process before the
  // private server is stopped; the failing commands still reject, and the row says so.
  client.on('error', (error: unknown) => process.stderr.write(`node-redis: ${String(error)}\n`));
  await client.connect();
  return client;
}

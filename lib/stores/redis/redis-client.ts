import { type Cluster, type Redis } from 'ioredis';
import { type IovalkeyClient, ioredisScripts } from './ioredis.client.js';
import { type NodeRedisClient, nodeRedisScripts } from './node-redis.client.js';
import { type ScriptClient } from './script-client.js';

/**
 * A client the Redis store can run its scripts on: ioredis or iovalkey (`Redis`, `Cluster`), or
 * node-redis (`createClient()`, `createCluster()`, `createSentinel()`).
 */
export type RedisClient = Redis | Cluster | IovalkeyClient | NodeRedisClient;

/**
 * Wraps a client of either library; undefined when `client` is neither. Apart from the adapters,
 * which import only the shared `script-client.ts`, so that neither depends on the other.
 */
export function scriptClientFor(client: unknown): ScriptClient | undefined {
  const c = client as Record<string, unknown> | null;
  if (c == null || typeof c !== 'object') return undefined;
  // ioredis spells it evalsha and lets scripts be defined; node-redis spells it evalSha and has
  // isOpen. Duck-typed, so a client from another copy of either library is still recognised.
  if (typeof c.evalsha === 'function' && typeof c.defineCommand === 'function') {
    // iovalkey is ioredis under another name, down to the option names.
    return ioredisScripts(client as Redis | Cluster);
  }
  if (typeof c.evalSha === 'function' && typeof c.isOpen === 'boolean') {
    return nodeRedisScripts(client as NodeRedisClient);
  }
  return undefined;
}

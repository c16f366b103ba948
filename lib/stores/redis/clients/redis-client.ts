import { type Cluster, type Redis } from 'ioredis';
import { glideScripts, isGlideClient, type ValkeyGlideClient } from './glide.client.js';
import { type IovalkeyClient, ioredisScripts } from './ioredis.client.js';
import { type NodeRedisClient, nodeRedisScripts } from './node-redis.client.js';
import { type ScriptClient } from './script-client.js';

/**
 * A client the Redis store can run its scripts on: ioredis or iovalkey (`Redis`, `Cluster`),
 * node-redis (`createClient()`, `createCluster()`, `createSentinel()`), or Valkey GLIDE
 * (`GlideClient`, `GlideClusterClient`).
 */
export type RedisClient = Redis | Cluster | IovalkeyClient | NodeRedisClient | ValkeyGlideClient;

/**
 * Wraps a client of any of these libraries; undefined when `client` is none. Apart from the
 * adapters, which import only the shared `script-client.ts`, so that none depends on another.
 */
export function scriptClientFor(client: unknown): ScriptClient | undefined {
  const c = client as Record<string, unknown> | null;
  if (c == null || typeof c !== 'object') return undefined;
  // ioredis spells it evalsha and lets scripts be defined; node-redis spells it evalSha and has
  // isOpen; GLIDE sends raw commands with customCommand. Duck-typed, so a client from another copy
  // of a library is still recognised.
  if (typeof c.evalsha === 'function' && typeof c.defineCommand === 'function') {
    // iovalkey is ioredis under another name, down to the option names.
    return ioredisScripts(client as Redis | Cluster);
  }
  if (typeof c.evalSha === 'function' && typeof c.isOpen === 'boolean') {
    return nodeRedisScripts(client as NodeRedisClient);
  }
  if (isGlideClient(c)) return glideScripts(client as ValkeyGlideClient);
  return undefined;
}

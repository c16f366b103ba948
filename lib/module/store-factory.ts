import { Redis, type RedisOptions } from 'ioredis';
import {
  type ResolvedRateLimitOptions,
  type RateLimitModuleOptions,
} from './rate-limit.options.js';
import { configError } from '../policy/validation.js';
import { BlockCacheStore } from '../stores/block-cache.js';
import { type BootstrapLogger, warnIfEvicting } from '../stores/eviction-warning.js';
import { MemoryStore } from '../stores/memory/memory.store.js';
import { RedisStore } from '../stores/redis/redis.store.js';
import { type RedisClient, scriptClientFor } from '../stores/redis/redis-client.js';
import { ResilientStore } from '../stores/resilient.store.js';
import { type RateLimitStore } from '../stores/store.interface.js';

/** The active store, whether the module made it (and so closes it), and how to await its link. */
export interface StoreHandle {
  readonly store: RateLimitStore;
  readonly owned: boolean;
  readonly kind: 'redis' | 'memory' | 'custom';
  /** The instance's memory store: what decides under `onStoreError: 'memory'`. */
  readonly memory: RateLimitStore;
  /** Resolves once a client the module created is connected, or after its connect timeout. */
  readonly ready: () => Promise<void>;
}

const CONNECT_TIMEOUT_MS = 2000;

/**
 * Defaults for clients the module creates: fail at once while disconnected instead of queueing
 * commands (the fallback answers meanwhile), retry a command at most once, and keep reconnecting
 * quickly so shared limiting resumes soon after Redis is back. Commands whose replies a reset
 * connection lost are sent again on reconnect: each decision carries an id, so Redis answers a
 * copy of one it ran with its first answer (turned off, ioredis would never settle them, and the
 * fallback would answer decisions Redis had counted). Options you pass override them.
 */
export const CLIENT_DEFAULTS: Readonly<RedisOptions> = Object.freeze({
  enableOfflineQueue: false,
  autoResendUnfulfilledCommands: true,
  maxRetriesPerRequest: 1,
  connectTimeout: CONNECT_TIMEOUT_MS,
  retryStrategy: (attempt: number) => Math.min(50 * attempt, 250),
});

const WHERE = 'RateLimitModule options';
const nothingToAwait = () => Promise.resolve();

/**
 * Picks the store the options describe: a custom one, Redis, or memory. Anything but a memory
 * store is wrapped so that a decision never waits past `timeout` and failures get `onStoreError`.
 */
export function createStore(
  raw: RateLimitModuleOptions,
  options: ResolvedRateLimitOptions,
  logger: BootstrapLogger,
): StoreHandle {
  const { store, redis, clock } = raw;
  let made: MemoryStore | undefined;
  const memory = () =>
    (made ??= new MemoryStore({
      clock,
      maxBytes: options.maxMemoryBytes,
      maxKeys: options.maxMemoryKeys,
    }));
  const resilient = (primary: RateLimitStore, ownsPrimary: boolean) => {
    const guarded = new ResilientStore(primary, {
      timeoutMs: options.timeout,
      onStoreError: options.onStoreError,
      fallback: memory(),
      ownsPrimary,
      logger,
    });
    // Outermost, so a flooding key costs neither a store call nor a deadline.
    if (!options.blockCache) return guarded;
    return new BlockCacheStore(guarded, {
      clock,
      onStoreFailure: (call) => guarded.degrade(call),
    });
  };

  if (store !== undefined) {
    if (store === null || typeof store.consume !== 'function') {
      throw configError(WHERE, 'store', store, 'an object with a consume() method');
    }
    // A memory store cannot fail or stall, so there is nothing to guard it against.
    if (store instanceof MemoryStore)
      return { store, owned: false, kind: 'custom', memory: store, ready: nothingToAwait };
    if (store instanceof RedisStore) {
      // Handed over ready-made, it gets what the module gives the Redis stores it builds.
      store.answerWithinByDefault(options.timeout);
      warnIfNeverOpened(store, logger);
      const ready = () => connected(store, logger);
      const guarded = resilient(store, false);
      return { store: guarded, owned: true, kind: 'redis', memory: memory(), ready };
    }
    const guarded = resilient(store, false);
    return { store: guarded, owned: true, kind: 'custom', memory: memory(), ready: nothingToAwait };
  }
  if (redis === undefined)
    return {
      store: memory(),
      owned: true,
      kind: 'memory',
      memory: memory(),
      ready: nothingToAwait,
    };
  if (scriptClientFor(redis) !== undefined) {
    const primary = new RedisStore({
      client: redis as RedisClient,
      clock,
      answerWithinMs: options.timeout,
    });
    warnIfNeverOpened(primary, logger);
    return {
      store: resilient(primary, false),
      owned: true,
      kind: 'redis',
      memory: memory(),
      ready: () => connected(primary, logger),
    };
  }
  if (typeof redis !== 'string' && (redis === null || typeof redis !== 'object')) {
    throw configError(
      WHERE,
      'redis',
      redis,
      'an ioredis or node-redis client, ioredis options or a URL',
    );
  }
  const client =
    typeof redis === 'string'
      ? new Redis(redis, CLIENT_DEFAULTS)
      : new Redis({ ...CLIENT_DEFAULTS, ...(redis as RedisOptions) });
  // Connection errors are answered by the fallback and logged once; keep them off the process.
  client.on('error', () => {});
  const primary = new RedisStore({
    client,
    clock,
    ownsClient: true,
    answerWithinMs: options.timeout,
  });
  return {
    store: resilient(primary, true),
    owned: true,
    kind: 'redis',
    memory: memory(),
    ready: () => connected(primary, logger),
  };
}

function warnIfNeverOpened(store: RedisStore, logger: BootstrapLogger): void {
  if (!store.neverOpened) return;
  logger.warn(
    `The ${store.library} client passed to RateLimitModule is not connected; call its connect() first (until then the fallback answers)`,
  );
}

/**
 * Waits, at bootstrap only, until the client is connected or its connect timeout has passed, so
 * that the first requests are shared rather than answered by the fallback. Polls: the same way
 * for both libraries, and only while the application starts. Then warms the store up and, if
 * connected, checks that Redis cannot evict the module's keys.
 */
async function connected(store: RedisStore, logger: BootstrapLogger): Promise<void> {
  const deadline = performance.now() + CONNECT_TIMEOUT_MS;
  while (!store.connected && !store.neverOpened && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  if (!store.connected) return store.warmUp();
  await Promise.all([store.warmUp(), warnIfEvicting(store, logger)]);
}

import { Redis, type RedisOptions } from 'ioredis';
import {
  type ResolvedRateLimitOptions,
  type RateLimitModuleOptions,
} from '../options/rate-limit.options.js';
import { configError } from '../policy/validation.js';
import { BlockCacheStore } from '../stores/block-cache.js';
import { adaptStore } from '../stores/method-store.js';
import { type OperationStore } from '../stores/operation-store.js';
import { type BootstrapLogger } from '../stores/redis/eviction-warning.js';
import { MemoryStore } from '../stores/memory/memory.store.js';
import { RedisStore } from '../stores/redis/redis.store.js';
import { type RedisClient, scriptClientFor } from '../stores/redis/clients/redis-client.js';
import { ResilientStore } from '../stores/resilience/resilient.store.js';
import { UnguardedStore } from '../stores/resilience/unguarded.store.js';
import { type CallStore } from '../store-contract/store-call.js';
import { type RateLimitStore } from '../store-contract/store.interface.js';
import { NO_TELEMETRY, type RateLimitTelemetry } from '../telemetry/rate-limit-telemetry.js';
import { type ClientOwner, CONNECT_TIMEOUT_MS, RedisLink } from './redis-link.js';
import { MemoryOverrideSource } from '../overrides/memory-override-source.js';
import { type OverrideSource } from '../overrides/override-source.js';
import { RedisOverrideSource } from '../overrides/redis-override-source.js';
import { type ActivityExchange, MemoryActivityExchange } from '../activity/activity-exchange.js';
import { RedisActivityExchange } from '../activity/redis-activity-exchange.js';

/** The active store, its link to Redis if any, and what the module does with them. */
export interface StoreHandle {
  /**
   * What the module offers as `RateLimitStore`: the head of the store chain, or the memory store
   * itself where no other store is involved.
   */
  readonly store: RateLimitStore;
  /** The head of the store chain: what the module calls. */
  readonly chain: OperationStore;
  /** Resolves once a Redis client is connected and warmed up, or after its connect timeout. */
  ready(): Promise<void>;
  /** What to log once the application has started, if a warning has not said it already. */
  startedMessage(): string | undefined;
  /** Closes what the module owns, and lets go of what it was handed. */
  close(): Promise<void>;
  /**
   * Where the limits changed at runtime live: Redis for the Redis store, shared by every
   * instance; this process for the memory store and for a custom store (which the module cannot
   * store anything else in).
   */
  overrides(): OverrideSource;
  /** Where instances share what they decided, for the console: as the overrides, Redis or this process. */
  activity(): ActivityExchange;
}

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

/**
 * Picks the store the options describe: a custom one, Redis, or memory. Anything but a memory
 * store is wrapped so that a decision never waits past `timeout` and failures get `onStoreError`.
 */
export function createStore(
  raw: RateLimitModuleOptions,
  options: ResolvedRateLimitOptions,
  logger: BootstrapLogger,
  telemetry: RateLimitTelemetry = NO_TELEMETRY,
): StoreHandle {
  const { store, redis, clock } = raw;
  let made: MemoryStore | undefined;
  const memory = () =>
    (made ??= new MemoryStore({
      clock,
      maxBytes: options.maxMemoryBytes,
      maxKeys: options.maxMemoryKeys,
    }));
  const guard = (
    primary: CallStore,
    ownsPrimary: boolean,
    ping?: (withinMs: number) => Promise<number>,
  ) =>
    new ResilientStore(primary, {
      timeoutMs: options.timeout,
      onStoreError: options.onStoreError,
      fallback: memory(),
      ownsPrimary,
      logger,
      telemetry,
      ping,
    });
  // Outermost, so a flooding key costs neither a store call nor a deadline.
  const cached = (guarded: ResilientStore): OperationStore =>
    options.blockCache ? new BlockCacheStore(guarded, { clock, telemetry }) : guarded;
  // A memory store cannot fail or stall, so nothing guards it (see `UnguardedStore`).
  const unguarded = (primary: MemoryStore) => new UnguardedStore(primary);
  const handle = (
    kind: string,
    offered: RateLimitStore,
    chain: OperationStore,
    owned: boolean,
  ): StoreHandle => ({
    store: offered,
    chain,
    ready: () => Promise.resolve(),
    startedMessage: () => `Using the ${kind} store`,
    close: async () => {
      if (owned) await chain.close();
    },
    overrides: () => new MemoryOverrideSource(clock),
    activity: () => new MemoryActivityExchange(),
  });
  const linked = (primary: RedisStore, owner: ClientOwner, ownsPrimary: boolean): StoreHandle => {
    // A cluster's PING goes to one master, which says nothing of the others.
    const ping = primary.isCluster ? undefined : (ms: number) => primary.ping(ms);
    const guarded = guard(primary, ownsPrimary, ping);
    const link = new RedisLink(primary, owner, logger, guarded);
    const active = cached(guarded);
    return {
      store: active,
      chain: active,
      ready: () => link.ready(),
      startedMessage: () => link.startedMessage,
      close: async () => {
        await active.close();
        await link.close();
      },
      overrides: () => RedisOverrideSource.forStore(primary, options.keyPrefix),
      activity: () => RedisActivityExchange.forStore(primary, options.keyPrefix),
    };
  };

  if (store !== undefined) {
    if (store === null || typeof store.consume !== 'function') {
      throw configError(WHERE, 'store', store, 'an object with a consume() method');
    }
    if (store instanceof MemoryStore) {
      made = store;
      return handle('custom', store, unguarded(store), false);
    }
    if (store instanceof RedisStore) {
      // Handed over ready-made, it gets what the module gives the Redis stores it builds.
      store.answerWithinByDefault(options.timeout);
      return linked(store, 'owner', false);
    }
    const chain = cached(guard(adaptStore(store), false));
    return handle('custom', chain, chain, true);
  }
  if (redis === undefined) return handle('memory', memory(), unguarded(memory()), true);
  if (scriptClientFor(redis) !== undefined) {
    const primary = new RedisStore({
      client: redis as RedisClient,
      clock,
      answerWithinMs: options.timeout,
    });
    return linked(primary, 'owner', true);
  }
  if (typeof redis !== 'string' && (redis === null || typeof redis !== 'object')) {
    throw configError(
      WHERE,
      'redis',
      redis,
      'an ioredis, iovalkey, node-redis or Valkey GLIDE client, ioredis options or a URL',
    );
  }
  const client =
    typeof redis === 'string'
      ? new Redis(redis, CLIENT_DEFAULTS)
      : new Redis({ ...CLIENT_DEFAULTS, ...(redis as RedisOptions) });
  const primary = new RedisStore({
    client,
    clock,
    ownsClient: true,
    answerWithinMs: options.timeout,
  });
  return linked(primary, 'module', true);
}

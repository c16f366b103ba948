/** Clients of every library the store accepts, so suites can run the same scenarios on each. */
import { Cluster, type ClusterOptions, Redis } from 'ioredis';
import { Cluster as IovalkeyCluster, Redis as Iovalkey } from 'iovalkey';
import { GlideClient, GlideClusterClient } from '@valkey/valkey-glide';
import { createClient, createCluster } from 'redis';
import { createClient as createClientV5, createCluster as createClusterV5 } from 'redis-v5';
import { type IovalkeyClient } from '../../lib/stores/redis/clients/ioredis.client.js';
import { type NodeRedisClient } from '../../lib/stores/redis/clients/node-redis.client.js';
import { type RedisClient } from '../../lib/stores/redis/clients/redis-client.js';
import { track, untrack } from './glide-clients.js';
import './glide-logger.js';
import { inTier } from './matrix.js';

/**
 * `node-redis` is the current major (6); `node-redis@5` the previous one, still common. `iovalkey`
 * is the ioredis fork the Valkey project keeps; `glide` is `@valkey/valkey-glide`.
 */
export type ClientKind = 'ioredis' | 'iovalkey' | 'node-redis' | 'node-redis@5' | 'glide';
/** The kinds every Redis suite runs on (ioredis alone below the full tier; see matrix.ts). */
export const CLIENT_KINDS: ClientKind[] = inTier(['ioredis', 'iovalkey', 'node-redis', 'glide']);
/** The kinds the store contract runs on: both majors of node-redis too. */
export const ALL_CLIENT_KINDS: ClientKind[] = inTier([
  'ioredis',
  'iovalkey',
  'node-redis',
  'node-redis@5',
  'glide',
]);

export interface Address {
  readonly host: string;
  readonly port: number;
}

export interface OpenOptions {
  /**
   * Build the client with its library's defaults only (offline queue on, default reconnection),
   * as an application that never tuned it would. Otherwise it reconnects every 50–250 ms.
   */
  libraryDefaults?: boolean;
  /** Log in as this ACL user instead of the default one. */
  user?: { readonly name: string; readonly password: string };
  /** GLIDE only: connect on the first command, so that the client opens without a server. */
  lazyConnect?: boolean;
}

interface Emitter {
  on(event: 'error', listener: () => void): unknown;
}

// Errors surface through the commands that fail; node-redis would crash the process on an
// 'error' event nobody listens to.
const ignore = () => {};
const quickReconnect = (attempt: number) => Math.min(50 * (attempt + 1), 250);

/** A connected client of `kind` to one server. */
export async function openClient(
  kind: ClientKind,
  address: Address,
  options: OpenOptions = {},
): Promise<RedisClient> {
  const login = options.user ? `${options.user.name}:${options.user.password}@` : '';
  const url = `redis://${login}${address.host}:${address.port}`;
  if (kind === 'ioredis' || kind === 'iovalkey') {
    const Client = kind === 'ioredis' ? Redis : (Iovalkey as unknown as typeof Redis);
    const client = options.libraryDefaults
      ? new Client(url)
      : new Client(url, { maxRetriesPerRequest: 1, retryStrategy: quickReconnect });
    client.on('error', ignore);
    await client.ping();
    return client;
  }
  if (kind === 'glide') return openGlide(address, options);
  const socket = options.libraryDefaults
    ? undefined
    : { reconnectStrategy: quickReconnect, connectTimeout: 1000 };
  const client: RedisClient =
    kind === 'node-redis' ? createClient({ url, socket }) : createClientV5({ url, socket });
  (client as unknown as Emitter).on('error', ignore);
  await (client as unknown as { connect(): Promise<unknown> }).connect();
  return client;
}

/**
 * ioredis Cluster options for tests: after a master dies, retry on another node soon and refresh
 * the slot map often, so commands reach the promoted replica within a second or two of the
 * promotion.
 */
export const CLUSTER_CLIENT_DEFAULTS: Readonly<ClusterOptions> = Object.freeze({
  scaleReads: 'master',
  retryDelayOnFailover: 100,
  retryDelayOnClusterDown: 100,
  retryDelayOnMoved: 50,
  slotsRefreshTimeout: 500,
  slotsRefreshInterval: 1000,
  redisOptions: { connectTimeout: 1000 },
});

/** A connected cluster client of `kind`, following failovers promptly. */
export async function openClusterClient(
  kind: ClientKind,
  startupNodes: readonly Address[],
): Promise<RedisClient> {
  if (kind === 'ioredis' || kind === 'iovalkey') {
    const ClusterClient =
      kind === 'ioredis' ? Cluster : (IovalkeyCluster as unknown as typeof Cluster);
    const client = new ClusterClient([...startupNodes], CLUSTER_CLIENT_DEFAULTS);
    client.on('error', ignore);
    await client.ping();
    return client;
  }
  if (kind === 'glide') {
    return track(
      await GlideClusterClient.createClient({
        addresses: startupNodes.map(({ host, port }) => ({ host, port })),
        ...GLIDE_TEST_OPTIONS,
      }),
    );
  }
  const options = {
    rootNodes: startupNodes.map((n) => ({ url: `redis://${n.host}:${n.port}` })),
    defaults: { socket: { reconnectStrategy: quickReconnect, connectTimeout: 1000 } },
  };
  const cluster: RedisClient =
    kind === 'node-redis' ? createCluster(options) : createClusterV5(options);
  (cluster as unknown as Emitter).on('error', ignore);
  await (cluster as unknown as { connect(): Promise<unknown> }).connect();
  return cluster;
}

/**
 * GLIDE options for tests: reconnect every 50–250 ms, and wait for replies as long as the store's
 * own deadlines could (GLIDE's 250 ms default would end decisions the store still waits for).
 */
const GLIDE_TEST_OPTIONS = {
  requestTimeout: 2000,
  connectionBackoff: { numberOfRetries: 3, factor: 50, exponentBase: 2 },
  advancedConfiguration: { connectionTimeout: 1000 },
} as const;

async function openGlide(address: Address, options: OpenOptions): Promise<RedisClient> {
  const credentials = options.user
    ? { username: options.user.name, password: options.user.password }
    : undefined;
  const client = await GlideClient.createClient({
    addresses: [{ host: address.host, port: address.port }],
    credentials,
    lazyConnect: options.lazyConnect,
    ...(options.libraryDefaults ? {} : GLIDE_TEST_OPTIONS),
  });
  return track(client);
}

/** Closes a client of any library, dropping it if the server does not answer soon. */
export async function closeClient(client: RedisClient): Promise<void> {
  if (client instanceof GlideClient || client instanceof GlideClusterClient) {
    untrack(client);
    // Closing twice is harmless, but a closed client says so.
    if (!(client as unknown as { isClosed?: boolean }).isClosed) client.close();
    return;
  }
  if (isIoredisLike(client)) {
    if (client.status === 'end') return;
    await Promise.race([client.quit().catch(ignore), sleep(1000)]);
    client.disconnect();
    return;
  }
  const nodeRedis = client as NodeRedisClient;
  if (!nodeRedis.isOpen) return;
  await Promise.race([nodeRedis.close().catch(ignore), sleep(1000)]);
  if (nodeRedis.isOpen) nodeRedis.destroy();
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/** An ioredis or iovalkey `Redis` or `Cluster`: the two libraries share their whole API. */
function isIoredisLike(client: RedisClient): client is Redis | Cluster | IovalkeyClient {
  return (
    client instanceof Redis ||
    client instanceof Cluster ||
    client instanceof Iovalkey ||
    client instanceof IovalkeyCluster
  );
}

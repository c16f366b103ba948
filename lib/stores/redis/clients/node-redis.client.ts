import { keySlot } from '../key-slot.js';
import { type NodeRedisSubscriber, nodeRedisSubscription } from './node-redis.subscriber.js';
import {
  alreadyLoaded,
  configRecord,
  FunctionsUnsupportedError,
  isNoScript,
  type ScriptClient,
} from './script-client.js';

/** Keys and arguments of a node-redis EVAL or EVALSHA. */
export interface NodeRedisEvalOptions {
  keys: string[];
  arguments: string[];
}

/**
 * The parts of a node-redis client (`createClient()`) or cluster (`createCluster()`), v5 or later,
 * that the store uses. Declared here so that nothing imports the `redis` package unless the
 * application does.
 */
export interface NodeRedisClient {
  readonly isOpen: boolean;
  /** Connected and usable now. A node-redis 5 cluster lacks it; `isOpen` stands in there. */
  readonly isReady?: boolean;
  evalSha(sha1: string, options: NodeRedisEvalOptions): Promise<unknown>;
  eval(script: string, options: NodeRedisEvalOptions): Promise<unknown>;
  fCall?(fn: string, options: NodeRedisEvalOptions): Promise<unknown>;
  functionLoad?(code: string): Promise<unknown>;
  configGet?(pattern: string): Promise<unknown>;
  /** A cluster's masters, each to hand to `nodeClient`. */
  readonly masters?: readonly unknown[];
  nodeClient?(node: unknown): Promise<NodeRedisClient> | NodeRedisClient;
  /** A cluster's slot map: each slot's master, with its `host:port`. */
  readonly slots?: ReadonlyArray<{ readonly master?: { readonly address?: string } } | undefined>;
  /** The same client with other command options (node-redis 5 and later). */
  withCommandOptions?(options: { timeout?: number }): NodeRedisClient;
  /** Opens the client; the module calls it on a client handed over unopened. */
  connect?(): Promise<unknown>;
  close(): Promise<void>;
  destroy(): void;
  /** Its events: `ready` after each (re)connection (`connect` on a cluster), `error`. */
  on?(event: string, listener: (error: Error) => void): unknown;
  off?(event: string, listener: (error: Error) => void): unknown;
}

/** What a client of one server sends beside the commands declared in {@link NodeRedisClient}. */
interface OneNodeCommands {
  sendCommand?(args: string[]): Promise<unknown>;
}

// Shutdown must finish even if the server never answers what is pending.
const CLOSE_GRACE_MS = 2000;

/** Runs the store's scripts on a node-redis client or cluster. */
export function nodeRedisScripts(client: NodeRedisClient): ScriptClient {
  // node-redis 6 arms an AbortSignal timer for every command (5 s by default) that only bounds
  // the wait to be written, and disarms it once the command is sent. The store sends nothing
  // while the client is not ready, so for decisions the timer never fires; a profile showed it at
  // about 10% of the process. Other commands keep the owner's options.
  const decisions = client.withCommandOptions?.({ timeout: 0 }) ?? client;
  // Only a cluster has a slot map; read through the client, which follows every topology change.
  const nodeOf =
    client.masters === undefined
      ? undefined
      : (key: string) => client.slots?.[keySlot(key)]?.master?.address ?? '';
  // A node-redis 5 cluster is open from the moment connect() is called, before it knows its
  // slots: one the store opens is ready once connect() has resolved.
  let opening = false;
  return {
    nodeOf,
    pingNode: nodeOf === undefined ? undefined : (node) => pingMaster(client, node),
    library: 'node-redis',
    ready: () => client.isReady ?? (client.isOpen && !opening),
    neverOpened: () => !client.isOpen,
    async open() {
      if (typeof client.connect !== 'function') {
        throw new TypeError('this node-redis client has no connect()');
      }
      opening = true;
      try {
        await client.connect();
      } finally {
        opening = false;
      }
    },
    onReady(listener) {
      // A cluster is ready once it knows its slots, which it tells as `connect`.
      const events = client.masters === undefined ? ['ready'] : ['ready', 'connect'];
      return listen(client, events, listener);
    },
    onError: (listener) => listen(client, ['error'], listener),
    run(script, keys, args) {
      // Cluster routing reads the first key, so every key of a decision shares its hash tag.
      const options = { keys: keys as string[], arguments: args as string[] };
      return decisions.evalSha(script.sha, options).catch((error: unknown) => {
        if (!isNoScript(error)) throw error;
        return decisions.eval(script.lua, options);
      });
    },
    call(fn, keys, args) {
      return decisions.fCall!(fn, { keys: keys as string[], arguments: args as string[] });
    },

    async loadLibrary(code) {
      // FUNCTION LOAD names no key: a cluster needs it on each master.
      const nodes = await primaries(client);
      const unsupported = (node: NodeRedisClient) =>
        typeof node.functionLoad !== 'function' || typeof client.fCall !== 'function';
      if (nodes.length === 0 || nodes.some(unsupported)) {
        throw new FunctionsUnsupportedError('node-redis');
      }
      await Promise.all(
        nodes.map((node) => node.functionLoad!(code).then(() => {}, alreadyLoaded)),
      );
    },
    async readConfig(pattern) {
      const nodes = await primaries(client);
      if (nodes.length === 0 || nodes.some((node) => typeof node.configGet !== 'function')) {
        throw new TypeError('this node-redis client cannot send CONFIG GET to its primaries');
      }
      return Promise.all(nodes.map(async (node) => configRecord(await node.configGet!(pattern))));
    },
    async command(args) {
      // Not declared above: a cluster's takes other arguments; a node's (or a client's) these.
      const [node] = (await primaries(client)) as Array<NodeRedisClient & OneNodeCommands>;
      if (typeof node?.sendCommand !== 'function') {
        throw new TypeError('this node-redis client cannot send a command to its primary');
      }
      return node.sendCommand([...args]);
    },
    async close() {
      if (!client.isOpen) return;
      // Still (re)connecting: nothing to flush, and close() would wait for the connection.
      if (client.isReady === false) return client.destroy();
      let timer: NodeJS.Timeout | undefined;
      const giveUp = new Promise<'late'>((resolve) => {
        timer = setTimeout(() => resolve('late'), CLOSE_GRACE_MS);
      });
      const closed = client.close().then(
        () => 'closed' as const,
        () => 'late' as const,
      );
      if ((await Promise.race([closed, giveUp])) === 'late') client.destroy();
      clearTimeout(timer);
    },
    subscribe: (channel, handlers) =>
      nodeRedisSubscription(client as NodeRedisSubscriber, channel, handlers),
  };
}

/** The client, or a client for each master of a cluster (none when the cluster cannot give one). */
async function primaries(client: NodeRedisClient): Promise<NodeRedisClient[]> {
  const { masters, nodeClient } = client;
  if (masters === undefined) return [client];
  if (typeof nodeClient !== 'function') return [];
  return Promise.all(masters.map((master) => nodeClient.call(client, master)));
}

/** PING to the master of a cluster at `node` (`host:port`), on the cluster's connection to it. */
async function pingMaster(client: NodeRedisClient, node: string): Promise<unknown> {
  const master = client.masters?.find((m) => (m as { address?: string }).address === node);
  if (master === undefined || typeof client.nodeClient !== 'function') {
    throw new Error(`no master ${node}`);
  }
  const connection = (await client.nodeClient(master)) as NodeRedisClient & OneNodeCommands;
  if (typeof connection.sendCommand !== 'function') {
    throw new TypeError('this node-redis client cannot send a command to a master');
  }
  return connection.sendCommand(['PING']);
}

/** Adds `listener` for each of `events`; returns what removes them again. */
function listen(
  client: NodeRedisClient,
  events: readonly string[],
  listener: (error: Error) => void,
): () => void {
  for (const event of events) client.on?.(event, listener);
  return () => {
    for (const event of events) client.off?.(event, listener);
  };
}

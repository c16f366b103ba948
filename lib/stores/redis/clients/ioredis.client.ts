import { type Socket } from 'node:net';
import { type Cluster, type Redis } from 'ioredis';
import { ioredisSubscription } from './ioredis.subscriber.js';
import { keySlot } from '../key-slot.js';
import { ConnectionLostError } from '../lost-replies.js';
import { alreadyLoaded, configRecord, isNoScript, type ScriptClient } from './script-client.js';

// Shutdown must finish even if the socket never reports its end.
const CLOSE_GRACE_MS = 2000;

/**
 * An iovalkey `Redis` or `Cluster`: the fork of ioredis that the Valkey project keeps, with the
 * same API. Declared by the parts the store uses, so that nothing imports `iovalkey` unless the
 * application does; the store runs it exactly as it runs ioredis.
 */
export interface IovalkeyClient {
  readonly status: string;
  readonly isCluster: boolean;
  evalsha(sha: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number }): void;
  quit(): Promise<unknown>;
  disconnect(): void;
}

/** Runs the store's scripts on an ioredis (or iovalkey) `Redis` or `Cluster`. */
export function ioredisScripts(client: Redis | Cluster): ScriptClient {
  const batch = client.isCluster ? () => {} : writeBatcher(client as Redis);
  const tracked = client.isCluster ? untracked : lostOnClose(client as Redis);
  return {
    library: libraryOf(client),
    ready() {
      // A lazyConnect client connects on its first command, which the store never sends while
      // the client is not ready: start the connection so that later decisions can use it.
      if (client.status === 'wait') client.connect().catch(() => {});
      return client.status === 'ready';
    },
    neverOpened: () => false,
    async open() {
      // Only a lazyConnect client waits to be told; any other connects on its own.
      if (client.status === 'wait') await client.connect();
    },
    onReady(listener) {
      client.on('ready', listener);
      return () => void client.off('ready', listener);
    },
    onError(listener) {
      client.on('error', listener);
      return () => void client.off('error', listener);
    },
    run(script, keys, args) {
      batch();
      const sent = client.evalsha(script.sha, keys.length, ...keys, ...args);
      return tracked(
        sent.catch((error: unknown) => {
          if (!isNoScript(error)) throw error;
          // EVAL both runs the script and puts it back in the server's cache for the next EVALSHA.
          return client.eval(script.lua, keys.length, ...keys, ...args);
        }),
      );
    },
    call(fn, keys, args) {
      batch();
      return tracked(client.fcall(fn, keys.length, ...keys, ...args));
    },
    async loadLibrary(code) {
      // FUNCTION LOAD names no key: a cluster needs it on each master.
      await Promise.all(
        primaries(client).map((node) =>
          tracked(node.function('LOAD', code)).then(() => {}, alreadyLoaded),
        ),
      );
    },
    readConfig(pattern) {
      return Promise.all(
        primaries(client).map(async (node) =>
          configRecord(await tracked(node.config('GET', pattern))),
        ),
      );
    },
    command(args) {
      const [node] = primaries(client);
      if (node === undefined) return Promise.reject(new Error('the cluster knows no primary yet'));
      return tracked(node.call(args[0], ...args.slice(1)));
    },
    close: () => closeIoredis(client),
    // A Cluster keeps each slot's nodes as `host:port`, the master first.
    nodeOf: client.isCluster
      ? (key) => (client as Cluster).slots[keySlot(key)]?.[0] ?? ''
      : undefined,
    pingNode: client.isCluster
      ? (node) => {
          const master = primaries(client).find(
            ({ options }) => `${options.host}:${options.port}` === node,
          );
          if (master === undefined) return Promise.reject(new Error(`no master ${node}`));
          return master.ping();
        }
      : undefined,
    subscribe: (channel, handlers) => ioredisSubscription(client, channel, handlers),
  };
}

/**
 * `'iovalkey'` or `'ioredis'`, for logs. The two share every name, so the probe asks the client
 * to define a command from a definition that throws when read, and looks at which package's code
 * read it. Nothing is defined.
 */
function libraryOf(client: Redis | Cluster): string {
  let stack = '';
  const probe = {
    get lua(): string {
      stack = new Error().stack ?? '';
      throw new Error('probe');
    },
  };
  try {
    client.defineCommand('rateLimitLibraryProbe', probe as unknown as { lua: string });
  } catch {
    // The definition threw, as it was meant to.
  }
  return /[\\/]iovalkey[\\/]/.test(stack) ? 'iovalkey' : 'ioredis';
}

/** The server, or each master of a cluster: where commands that name no key must go. */
function primaries(client: Redis | Cluster): Redis[] {
  return client.isCluster ? (client as Cluster).nodes('master') : [client as Redis];
}

const untracked = <T>(sent: Promise<T>): Promise<T> => sent;

/**
 * With `autoResendUnfulfilledCommands` off, ioredis drops the commands awaiting a reply when the
 * connection closes, and never settles them: Redis may have run them, and nobody would learn that
 * their replies were lost. For such a client, decisions in flight are rejected with a
 * {@link ConnectionLostError} when it closes, so that the store can send them again; so are its
 * other commands (a library load, a CONFIG GET), which would otherwise hold a bootstrap up for
 * good. A client that resends (the default) sends them itself, and costs nothing here.
 */
function lostOnClose(client: Redis): <T>(sent: Promise<T>) => Promise<T> {
  if (client.options.autoResendUnfulfilledCommands !== false) return untracked;
  const inFlight = new Set<(error: Error) => void>();
  client.on('close', () => {
    for (const reject of inFlight) reject(new ConnectionLostError());
    inFlight.clear();
  });
  return <T>(sent: Promise<T>) =>
    new Promise<T>((resolve, reject) => {
      inFlight.add(reject);
      sent.then(
        (reply) => {
          inFlight.delete(reject);
          resolve(reply);
        },
        (error: unknown) => {
          inFlight.delete(reject);
          reject(error);
        },
      );
    });
}

// Decisions written together at most: Redis starts on a batch while the next is still being
// made, which a closed loop of one connection showed to matter as much as fewer writes.
const MAX_BATCH = 16;

/**
 * Gathers the decisions sent in one turn of the event loop into few socket writes. ioredis writes
 * each command to the socket at once, one system call each, which profiles put at a quarter of a
 * busy process; corking the socket until the turn ends, or for {@link MAX_BATCH} decisions, sends
 * them together, as node-redis does. One `nextTick` per turn, not per decision.
 */
function writeBatcher(client: Redis): () => void {
  let corked: Socket | undefined;
  let batched = 0;
  const uncork = () => {
    corked?.uncork();
    corked = undefined;
  };
  return () => {
    if (corked !== undefined) {
      if (++batched < MAX_BATCH) return;
      corked.uncork();
      corked.cork();
      batched = 0;
      return;
    }
    const stream = (client as { stream?: Socket }).stream;
    if (stream === undefined || typeof stream.cork !== 'function') return;
    stream.cork();
    corked = stream;
    batched = 0;
    process.nextTick(uncork);
  };
}

/** Quits, resolving once the connection has really ended (or after a short grace period). */
async function closeIoredis(client: Redis | Cluster): Promise<void> {
  if (client.status === 'end') return;
  // Not connected: there is nothing to flush, and no 'end' event may ever come.
  if (client.status !== 'ready' && client.status !== 'connect') return client.disconnect();
  const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
  try {
    await client.quit();
  } catch {
    // The connection broke meanwhile: drop it without waiting for a reply.
    client.disconnect();
  }
  let timer: NodeJS.Timeout | undefined;
  const giveUp = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_GRACE_MS)));
  await Promise.race([ended, giveUp]);
  clearTimeout(timer);
}

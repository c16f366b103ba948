import { type ChannelSubscription, type SubscriptionHandlers } from './channel-subscription.js';
import { type DecisionScript } from '../decisions/scripts.js';

/** Script arguments as the store builds them. */
export type ScriptArgs = readonly string[];

/**
 * What the Redis store needs from a client, the same for both libraries: run a script by its SHA
 * (loading it when the server lost it), say whether a command sent now would reach the server at
 * once, and close. Each library's adapter builds one; `redis-client.ts` picks the adapter.
 */
export interface ScriptClient {
  /** `'ioredis'`, `'iovalkey'`, `'node-redis'` or `'valkey-glide'`, for logs. */
  readonly library: string;
  /**
   * Whether a command sent now goes out at once. Both libraries queue commands while disconnected
   * and send them on reconnect, long after the fallback answered; the store sends nothing then.
   */
  ready(): boolean;
  /**
   * Whether the client was never opened by its owner (node-redis needs `connect()`; a GLIDE
   * client created with `lazyConnect` has not connected yet).
   */
  neverOpened(): boolean;
  /**
   * Opens a client nobody has opened: settles once it is connected, or rejects when it gives up
   * (a node-redis cluster none of whose root nodes answers).
   */
  open(): Promise<void>;
  /** Calls `listener` each time the client is ready again after (re)connecting; returns its removal. */
  onReady(listener: () => void): () => void;
  /**
   * Listens to the client's `error` events, which both libraries emit on every failed connection
   * attempt (node-redis throws one nobody listens to, which ends the process); returns its removal.
   */
  onError(listener: (error: Error) => void): () => void;
  /** EVALSHA `script` over `keys` and `args`, and EVAL when the server answers NOSCRIPT. */
  run(script: DecisionScript, keys: readonly string[], args: ScriptArgs): Promise<unknown>;
  /** FCALL the function `fn` over `keys` and `args`. */
  call(fn: string, keys: readonly string[], args: ScriptArgs): Promise<unknown>;
  /**
   * FUNCTION LOAD `code` on every primary (each master of a cluster); a library already there
   * counts as loaded. Rejects with the server's error, or with a {@link FunctionsUnsupportedError}
   * when the client cannot send the commands.
   */
  loadLibrary(code: string): Promise<void>;
  /**
   * CONFIG GET `pattern` on every primary (each master of a cluster): one record of parameter
   * names to values per primary. Rejects with the server's error where CONFIG is refused.
   */
  readConfig(pattern: string): Promise<Array<Record<string, string>>>;
  /**
   * Sends a command that names no key (`TIME`, `INFO server`) to the server, or to the first
   * primary of a cluster, and resolves with its reply.
   */
  command(args: readonly string[]): Promise<unknown>;
  /** Ends the connection, waiting at most a short while for pending replies. */
  close(): Promise<void>;
  /**
   * On a cluster client: the master serving `key`'s slot in the client's slot map, as
   * `host:port`, or '' while the map does not know. Absent on a single-server client.
   */
  readonly nodeOf?: (key: string) => string;
  /**
   * On a cluster client: sends PING to the master at `node` (`host:port`, as {@link nodeOf}
   * names it) on the client's own connection to it. Rejects when the client knows no such
   * master. Absent on a single-server client.
   */
  readonly pingNode?: (node: string) => Promise<unknown>;
  /**
   * Subscribes to `channel` on a connection of its own, made in the background: a copy of the
   * client, or for GLIDE, which takes its subscriptions only when a client is created, a new
   * client with the same options.
   */
  readonly subscribe?: (channel: string, handlers: SubscriptionHandlers) => ChannelSubscription;
}

/** Whether a Redis error reply says the server does not hold the script. */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/** Whether a FUNCTION LOAD failed only because that library is loaded already. */
export function alreadyLoaded(error: unknown): void {
  if (!(error instanceof Error && /already exists/i.test(error.message))) throw error;
}

/** A client too old to send FCALL or FUNCTION LOAD: decisions go out as scripts. */
export class FunctionsUnsupportedError extends Error {
  override readonly name = 'FunctionsUnsupportedError';
  constructor(library: string) {
    super(`this ${library} client does not support Redis Functions`);
  }
}

/** Rejection of a decision that was not sent because the client is not connected. */
export class StoreNotConnectedError extends Error {
  override readonly name = 'StoreNotConnectedError';
  /** `reason`: the latest connection error the client reported, when known. */
  constructor(library: string, reason?: string) {
    const why = reason === undefined ? '' : ` (${reason})`;
    super(`the ${library} client is not connected${why}; nothing was sent`);
  }
}

/** A CONFIG GET reply as a record: a flat list of names and values, a map, or a record already. */
export function configRecord(reply: unknown): Record<string, string> {
  const record: Record<string, string> = {};
  if (Array.isArray(reply)) {
    for (let i = 0; i + 1 < reply.length; i += 2) record[String(reply[i])] = String(reply[i + 1]);
  } else if (reply instanceof Map) {
    for (const [name, value] of reply) record[String(name)] = String(value);
  } else if (reply !== null && typeof reply === 'object') {
    for (const [name, value] of Object.entries(reply)) record[name] = String(value);
  }
  return record;
}

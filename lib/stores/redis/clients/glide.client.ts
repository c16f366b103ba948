import { GlideLink, isConnectionFailure } from './glide-connection.js';
import { glideRecord, repliesByNode, serverError } from './glide-replies.js';
import { GlideSlotMap } from './glide-slots.js';
import { glideSubscription } from './glide.subscriber.js';
import { alreadyLoaded, isNoScript, type ScriptClient } from './script-client.js';

/** Where a GLIDE cluster client sends a command; a single-server client takes none. */
export type GlideRoute =
  | 'allPrimaries'
  | 'randomNode'
  | { readonly type: 'routeByAddress'; readonly host: string; readonly port?: number };

/** Options of a GLIDE custom command: the store sets only `route`, on a cluster client. */
export interface GlideCommandOptions {
  route?: GlideRoute;
  /** GLIDE's `Decoder`; declared so that a `GlideClient`'s own options match. */
  decoder?: number;
}

/**
 * A Valkey GLIDE client (`@valkey/valkey-glide` 2.x): a `GlideClient` or a `GlideClusterClient`.
 * Declared by the parts the store uses, so that nothing imports the package unless the
 * application does. GLIDE starts without a reachable server only with `lazyConnect: true`.
 */
export interface ValkeyGlideClient {
  customCommand(args: string[], options?: GlideCommandOptions): Promise<unknown>;
  /** Not used: with `customCommand`, it tells a GLIDE client from the others. */
  readonly invokeScript: (...args: never[]) => unknown;
  /** Present on a `GlideClusterClient` only. */
  readonly fcallWithRoute?: (...args: never[]) => unknown;
  close(errorMessage?: string): void;
}

/** Whether `client` looks like a GLIDE client: its raw-command and script methods. */
export function isGlideClient(client: Record<string, unknown>): boolean {
  return typeof client.customCommand === 'function' && typeof client.invokeScript === 'function';
}

/** Runs the store's scripts on a GLIDE `GlideClient` or `GlideClusterClient`. */
export function glideScripts(client: ValkeyGlideClient): ScriptClient {
  const cluster = typeof client.fcallWithRoute === 'function';
  // Replies are read the same whatever the client's decoder: integers and arrays of them, and
  // strings or Buffers where only their text matters (configs, addresses).
  const send = (args: string[], route?: GlideRoute) =>
    route === undefined ? client.customCommand(args) : client.customCommand(args, { route });
  const lazy = (client as { config?: { lazyConnect?: boolean } }).config?.lazyConnect === true;
  const slots = cluster
    ? new GlideSlotMap(() => send(['CLUSTER', 'SLOTS'], 'randomNode'))
    : undefined;
  // A cluster is reachable while any master answers.
  const ping = (): Promise<unknown> => {
    const masters = slots?.masters() ?? [];
    if (masters.length === 0) return send(['PING'], cluster ? 'randomNode' : undefined);
    return Promise.any(masters.map((node) => send(['PING'], byAddress(node))));
  };
  const link = new GlideLink(ping, lazy, cluster);
  if (slots !== undefined) link.onReady(() => slots.stale());

  /** Sends a command of the store's, in the server's words when it fails. */
  const command = (args: string[], route?: GlideRoute): Promise<unknown> =>
    link.watch(send(args, route)).catch((error: unknown) => {
      slots?.stale();
      throw serverError(error);
    });
  // A cluster client sends a keyed FCALL or EVALSHA to the master of the first key's slot (every
  // key of a decision shares its hash tag), and one without keys to any node.
  const keyed = (head: string[], keys: readonly string[], args: readonly string[]) =>
    command([...head, String(keys.length), ...keys, ...args]);
  const primaries: GlideRoute | undefined = cluster ? 'allPrimaries' : undefined;
  // Scripts this client has sent as EVAL once, which left them in the server's cache.
  const evaluated = new Set<string>();

  return {
    library: 'valkey-glide',
    ready: () => link.ready,
    neverOpened: () => link.unopened,
    open: () => link.open(),
    onReady: (listener) => link.onReady(listener),
    onError: (listener) => link.onError(listener),
    run(script, keys, args) {
      // A script's first run is an EVAL, which also caches it: GLIDE would log the NOSCRIPT
      // that an EVALSHA meets on a server that has not seen it.
      if (!evaluated.has(script.sha)) {
        return keyed(['EVAL', script.lua], keys, args).then((reply) => {
          evaluated.add(script.sha);
          return reply;
        });
      }
      return keyed(['EVALSHA', script.sha], keys, args).catch((error: unknown) => {
        if (!isNoScript(error)) throw error;
        // EVAL both runs the script and puts it back in the server's cache for the next EVALSHA.
        return keyed(['EVAL', script.lua], keys, args);
      });
    },
    call: (fn, keys, args) => keyed(['FCALL', fn], keys, args),
    async loadLibrary(code) {
      // Asked first, then loaded only where missing: GLIDE logs every error reply, and a second
      // instance would otherwise log that the library already exists as it starts.
      const name = /^#!lua name=(\S+)/.exec(code)?.[1] ?? '';
      const listed = await command(['FUNCTION', 'LIST', 'LIBRARYNAME', name], primaries).catch(
        (error: unknown) => {
          // A user allowed to load but not to list: load everywhere, as the other clients do.
          if (isConnectionFailure(error)) throw error;
          return undefined;
        },
      );
      const missing =
        listed === undefined
          ? [['', undefined] as const]
          : repliesByNode(listed, cluster).filter(
              ([, libraries]) => !(Array.isArray(libraries) && libraries.length > 0),
            );
      await Promise.all(
        missing.map(([node]) =>
          command(['FUNCTION', 'LOAD', code], node === '' ? primaries : byAddress(node)).then(
            () => {},
            alreadyLoaded,
          ),
        ),
      );
    },
    async readConfig(pattern) {
      const reply = await command(['CONFIG', 'GET', pattern], primaries);
      return repliesByNode(reply, cluster).map(([, config]) => glideRecord(config));
    },
    // One node's answer (its clock, its INFO): a cluster client would otherwise ask every node.
    command: (args) => command([...args], cluster ? 'randomNode' : undefined),
    close() {
      link.close();
      client.close();
      return Promise.resolve();
    },
    nodeOf: slots === undefined ? undefined : (key) => slots.nodeOf(key),
    // Sent as is: a master that does not answer says nothing of the link to the others.
    pingNode: slots === undefined ? undefined : (node) => send(['PING'], byAddress(node)),
    subscribe: (channel, handlers) => glideSubscription(client, channel, handlers),
  };
}

/** A route to the node at `address` (`host:port`). */
function byAddress(address: string): GlideRoute {
  const at = address.lastIndexOf(':');
  return {
    type: 'routeByAddress',
    host: address.slice(0, at),
    port: Number(address.slice(at + 1)),
  };
}

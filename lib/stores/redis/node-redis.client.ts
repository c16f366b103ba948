import { isNoScript, type ScriptArgs, type ScriptClient } from './script-client.js';

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
  close(): Promise<void>;
  destroy(): void;
}

// Shutdown must finish even if the server never answers what is pending.
const CLOSE_GRACE_MS = 2000;

/** Runs the store's scripts on a node-redis client or cluster. */
export function nodeRedisScripts(client: NodeRedisClient): ScriptClient {
  return {
    library: 'node-redis',
    ready: () => client.isReady ?? client.isOpen,
    neverOpened: () => !client.isOpen,
    run(script, keys, args) {
      // Cluster routing reads the first key, so every key of a decision shares its hash tag.
      const options = { keys: keys as string[], arguments: strings(args) };
      return client.evalSha(script.sha, options).catch((error: unknown) => {
        if (!isNoScript(error)) throw error;
        return client.eval(script.lua, options);
      });
    },
    async close() {
      if (!client.isOpen) return;
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
  };
}

// node-redis sends strings (or buffers) only.
function strings(args: ScriptArgs): string[] {
  const out = new Array<string>(args.length);
  for (let i = 0; i < args.length; i++) out[i] = String(args[i]);
  return out;
}

import {
  FunctionsUnsupportedError,
  type ScriptArgs,
  type ScriptClient,
} from '../clients/script-client.js';
import { DECISION_LIBRARY, type DecisionScript } from './scripts.js';

// After a load that failed for a passing reason (the connection dropped), the next attempt waits
// this long, so that a server in trouble is not sent the library on every decision.
const RELOAD_AFTER_MS = 10_000;

/**
 * Runs decisions as Redis Functions where the server has them, and as scripts (EVALSHA, then EVAL
 * on NOSCRIPT) where it has not. A function's library is loaded once, so a call runs only the
 * decision; a script runs its whole body, defining every helper again, on every call.
 *
 * Which one a server takes is learned once: a user whose ACL refuses `FUNCTION` and managed
 * services that disable it get scripts for good. A server that loses the library
 * (a restart without persistence, `FUNCTION FLUSH`, a new cluster node) answers that call as a
 * script while the library is loaded again.
 */
export class DecisionRunner {
  /** Undefined until a load has succeeded or been refused. */
  private mode: 'functions' | 'scripts' | undefined;
  private loading: Promise<void> | undefined;
  private nextLoadAt = 0;

  constructor(
    private readonly client: ScriptClient,
    functions: boolean,
  ) {
    if (!functions) this.mode = 'scripts';
  }

  /** Whether decisions go out as FCALL now. */
  get usesFunctions(): boolean {
    return this.mode === 'functions';
  }

  /** Loads the library on every primary; resolves whatever happens. */
  load(): Promise<void> {
    if (this.mode === 'scripts') return Promise.resolve();
    this.loading ??= this.client.loadLibrary(DECISION_LIBRARY.code).then(
      () => {
        this.mode = 'functions';
        this.loading = undefined;
      },
      (error: unknown) => {
        if (refusesFunctions(error)) this.mode = 'scripts';
        else this.nextLoadAt = performance.now() + RELOAD_AFTER_MS;
        this.loading = undefined;
      },
    );
    return this.loading;
  }

  /** The server answered that it does not hold the library: loaded again, scripts meanwhile. */
  libraryLost(): void {
    if (this.mode !== 'functions') return;
    this.mode = undefined;
    void this.load();
  }

  /**
   * FCALLs `fn`, a function with no script twin (its decision keeps its id in the library's
   * memory). A server that does not hold the library answers it with the error, and the library
   * is loaded again.
   */
  callFunction(fn: string, keys: readonly string[], args: ScriptArgs): Promise<unknown> {
    return this.client.call(fn, keys, args).catch((error: unknown) => {
      if (isNoFunction(error)) this.libraryLost();
      throw error;
    });
  }

  /**
   * Runs `script`'s decision, or a batch of them with `fn` = `DECISION_LIBRARY.batchFn` and the
   * batch script.
   */
  run(
    script: DecisionScript,
    keys: readonly string[],
    args: ScriptArgs,
    fn = DECISION_LIBRARY.fn,
  ): Promise<unknown> {
    if (this.mode === 'functions') {
      return this.client.call(fn, keys, args).catch((error: unknown) => {
        if (!isNoFunction(error)) throw error;
        this.libraryLost();
        return this.client.run(script, keys, args);
      });
    }
    if (
      this.mode === undefined &&
      this.loading === undefined &&
      performance.now() >= this.nextLoadAt
    ) {
      void this.load();
    }
    return this.client.run(script, keys, args);
  }
}

/** Whether a Redis error reply says the server does not hold the function. */
export function isNoFunction(error: unknown): boolean {
  return error instanceof Error && /function not found/i.test(error.message);
}

/**
 * Whether a failed `FUNCTION LOAD` says this server or user cannot use Functions at all, as
 * opposed to a passing failure (a dropped connection, a server out of memory for now).
 */
function refusesFunctions(error: unknown): boolean {
  if (error instanceof FunctionsUnsupportedError) return true;
  if (!(error instanceof Error) || error.message.startsWith('OOM')) return false;
  return /unknown command|unknown subcommand|NOPERM|not allowed|disabled|not supported/i.test(
    error.message,
  );
}

import { type ScriptClient } from './clients/script-client.js';
import { isError } from '../errors.js';

// A client that gave up opening (a node-redis cluster none of whose root nodes answered) is
// opened again after this long, until it is open or the store closes.
const REOPEN_MS = 1000;

/**
 * What the store keeps of its client's connection for the module: the latest connection error
 * (kept off the process, and named in the outage warning instead), and the opening of a client
 * handed over unopened, in the background, so that the application starts without waiting for it.
 */
export class ClientWatch {
  private latestError: Error | undefined;
  private openedHere = false;
  private stopped = false;
  private reopenTimer: NodeJS.Timeout | undefined;

  constructor(private readonly client: ScriptClient) {}

  /** The latest error the client reported since it was last ready, while watched. */
  get error(): Error | undefined {
    return this.latestError;
  }

  /** Whether {@link open} was called: the client is the store's to close then. */
  get opened(): boolean {
    return this.openedHere;
  }

  /**
   * Listens to the client's `error` and `ready` events, calling `onReady` on each (re)connection;
   * returns what removes both listeners.
   */
  watch(onReady: () => void): () => void {
    const offError = this.client.onError((error) => {
      this.latestError = error;
    });
    const offReady = this.client.onReady(() => {
      this.latestError = undefined;
      onReady();
    });
    return () => {
      offError();
      offReady();
    };
  }

  /** Opens the client in the background, trying again until it is open or {@link stop} is called. */
  open(): void {
    if (this.openedHere) return;
    this.openedHere = true;
    const attempt = () => {
      this.reopenTimer = undefined;
      if (this.stopped || !this.client.neverOpened()) return;
      // Caught: a client that gives up (or is closed meanwhile) must leave nothing unhandled.
      this.client.open().catch((error: unknown) => {
        if (isError(error)) this.latestError ??= error;
        if (!this.stopped) this.reopenTimer = setTimeout(attempt, REOPEN_MS).unref();
      });
    };
    attempt();
  }

  /** Stops opening the client again. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.reopenTimer);
    this.reopenTimer = undefined;
  }
}

import { type BootstrapLogger, warnIfEvicting } from '../stores/redis/eviction-warning.js';
import { type RedisStore } from '../stores/redis/redis.store.js';
import { StoreNotConnectedError } from '../stores/redis/clients/script-client.js';

/** How long bootstrap waits for a client to connect, and for the warm-up that follows. */
export const CONNECT_TIMEOUT_MS = 2000;

/** Who closes the client: the module (it created it), or its owner, who handed it over. */
export type ClientOwner = 'module' | 'owner';

/** Who answers decisions while Redis cannot, told when the client could not connect at start and when it does. */
export interface ConnectionListener {
  /** Redis was not reachable as the application started: `error` is what a decision would meet. */
  unreachableAtStart(error: Error, reason: string): void;
  /** The client connected after such a start. */
  connected(): void;
}

/**
 * The module's side of one Redis client. The application starts whether Redis is there or not:
 * the module listens to the client's errors (a lost connection never ends the process), opens a
 * client handed over unopened in the background, and waits for it at bootstrap only briefly.
 * While Redis is unreachable the fallback answers, as one warning says; once the client connects,
 * the store is warmed up, the eviction check runs, and one line says that limits are shared.
 */
export class RedisLink {
  private state: 'starting' | 'unreachable' | 'connected' = 'starting';
  private readonly unwatch: () => void;
  private readonly openedHere: boolean;

  constructor(
    private readonly store: RedisStore,
    private readonly owner: ClientOwner,
    private readonly logger: BootstrapLogger,
    private readonly listener: ConnectionListener,
  ) {
    this.unwatch = store.watchClient(() => this.onReady());
    this.openedHere = store.neverOpened;
    if (this.openedHere) store.connectInBackground();
  }

  /**
   * Waits, at bootstrap only, until the client is connected or {@link CONNECT_TIMEOUT_MS} has
   * passed, so that the first requests are shared rather than answered by the fallback. Polls:
   * the same way for every client, and only while the application starts. Never rejects.
   */
  async ready(): Promise<void> {
    const deadline = performance.now() + CONNECT_TIMEOUT_MS;
    while (!this.store.connected && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    if (!this.store.connected) {
      this.state = 'unreachable';
      const reason =
        this.store.connectionError?.message ?? `not connected within ${CONNECT_TIMEOUT_MS}ms`;
      // What a decision would fail with now, for an onStoreError handler to choose by.
      const error = new StoreNotConnectedError(this.store.library, reason);
      this.listener.unreachableAtStart(error, reason);
      return;
    }
    this.state = 'connected';
    // A server that drops away during the warm-up must not hold the application up.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, CONNECT_TIMEOUT_MS)));
    await Promise.race([this.warmUp(), late]);
    clearTimeout(timer);
  }

  /** What the module logs once the application has started; nothing after the warning. */
  get startedMessage(): string | undefined {
    if (this.state === 'unreachable') return undefined;
    const runAs = this.store.usesFunctions ? 'functions' : 'scripts';
    return `Using the redis store (${this.store.library}; decisions run as ${runAs})`;
  }

  /**
   * On shutdown, after the store was closed: closes a client the module opened, and lets go of
   * one its owner keeps (a closed client keeps the listener, for errors its socket reports late).
   */
  async close(): Promise<void> {
    if (this.openedHere) await this.store.close();
    else if (this.owner === 'owner') this.unwatch();
  }

  /** The first connection after a startup without Redis: shared limiting starts now. */
  private onReady(): void {
    if (this.state !== 'unreachable') return;
    this.state = 'connected';
    this.listener.connected();
    void this.warmUp();
  }

  /** Loads the scripts and checks eviction; resolves whatever happens. */
  private async warmUp(): Promise<void> {
    const checks = [this.store.warmUp(), warnIfEvicting(this.store, this.logger)];
    await Promise.all(checks).catch(() => {});
  }
}

// While the link is down, the server is asked whether it answers again this often.
const PROBE_EVERY_MS = 100;

/**
 * Whether a GLIDE client can be sent to now. GLIDE reconnects on its own and tells nobody: a
 * command sent meanwhile waits in its queue for up to its `requestTimeout`. So the link is
 * learned from the commands' failures: one failing for a connection reason marks it down and is
 * told to the `onError` listeners, and then a PING, one at a time every {@link PROBE_EVERY_MS},
 * until one answers, marks it up again and wakes the `onReady` listeners. On a cluster, where a
 * failure may be one node's, the PING (to any master) is sent first, and only its failure marks
 * the link down: the other masters' decisions go on. Nothing runs while up.
 */
export class GlideLink {
  private state: 'unopened' | 'up' | 'down' | 'closed';
  private readonly readyListeners = new Set<() => void>();
  private readonly errorListeners = new Set<(error: Error) => void>();
  private probeTimer: NodeJS.Timeout | undefined;
  private probing = false;
  private opening: Promise<void> | undefined;
  private checking = false;

  /**
   * `ping`: a PING the server (any master of a cluster) answers when reachable; `lazy`: the
   * client has not connected yet; `cluster`: a failure may be one node's.
   */
  constructor(
    private readonly ping: () => Promise<unknown>,
    lazy: boolean,
    private readonly cluster = false,
  ) {
    this.state = lazy ? 'unopened' : 'up';
  }

  get ready(): boolean {
    // A lazyConnect client connects on its first command; the store sends none until it is
    // ready, so the first look starts the connection.
    if (this.state === 'unopened') void this.open().catch(() => {});
    return this.state === 'up';
  }

  /** Whether the client was created with `lazyConnect` and has not connected since. */
  get unopened(): boolean {
    return this.state === 'unopened';
  }

  /** Connects a lazy client: resolves once the server answers; on failure, keeps probing it. */
  open(): Promise<void> {
    if (this.state !== 'unopened') return Promise.resolve();
    this.opening ??= this.ping().then(
      () => {
        this.opening = undefined;
        this.markUp();
      },
      (error: unknown) => {
        this.opening = undefined;
        this.markDown(asError(error));
        throw error;
      },
    );
    return this.opening;
  }

  onReady(listener: () => void): () => void {
    this.readyListeners.add(listener);
    return () => void this.readyListeners.delete(listener);
  }

  onError(listener: (error: Error) => void): () => void {
    this.errorListeners.add(listener);
    return () => void this.errorListeners.delete(listener);
  }

  /** `sent`, marking the link down when it fails for a connection reason. */
  watch<T>(sent: Promise<T>): Promise<T> {
    return sent.catch((error: unknown) => {
      if (isConnectionFailure(error)) {
        if (this.cluster && (error as Error).name !== 'ClosingError') this.check();
        else this.markDown(asError(error));
      }
      throw error;
    });
  }

  /** On a cluster: marks the link down only when no master answers a PING either. */
  private check(): void {
    if (this.checking || this.state !== 'up') return;
    this.checking = true;
    this.ping().then(
      () => (this.checking = false),
      (error: unknown) => {
        this.checking = false;
        if (this.state === 'up') this.markDown(asError(error));
      },
    );
  }

  /** Stops probing: the client is closed. */
  close(): void {
    this.state = 'closed';
    clearTimeout(this.probeTimer);
    this.probeTimer = undefined;
  }

  private markDown(error: Error): void {
    if (this.state === 'closed') return;
    if (error.name === 'ClosingError') {
      // Closed by its owner: it will never answer again.
      this.close();
    } else {
      this.state = 'down';
      this.scheduleProbe();
    }
    for (const listener of this.errorListeners) listener(error);
  }

  private markUp(): void {
    if (this.state === 'closed' || this.state === 'up') return;
    this.state = 'up';
    for (const listener of this.readyListeners) listener();
  }

  private scheduleProbe(): void {
    if (this.probeTimer !== undefined || this.probing || this.state !== 'down') return;
    this.probeTimer = setTimeout(() => this.probe(), PROBE_EVERY_MS).unref();
  }

  private probe(): void {
    this.probeTimer = undefined;
    this.probing = true;
    this.ping().then(
      () => {
        this.probing = false;
        this.markUp();
      },
      (error: unknown) => {
        this.probing = false;
        if (this.state === 'closed') return;
        this.markDown(asError(error));
      },
    );
  }
}

/**
 * Whether a GLIDE rejection says the server could not be reached: the connection broke
 * (`ConnectionError`), no reply came within `requestTimeout` (`TimeoutError`, also what a command
 * queued while GLIDE reconnects ends with), a lazy client failed to connect, or the client was
 * closed. A reply the server sent is not one.
 */
export function isConnectionFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const { name } = error;
  if (name === 'ConnectionError' || name === 'TimeoutError' || name === 'ClosingError') return true;
  return name === 'RequestError' && /connect failed|IoError/.test(error.message);
}

/** `error` as an Error, its message without the line break GLIDE ends some with. */
function asError(error: unknown): Error {
  if (!(error instanceof Error)) return new Error(String(error));
  const message = error.message.trimEnd();
  if (message !== error.message) error.message = message;
  return error;
}

/** Rejection of a store call that outlived its deadline. */
export class StoreTimeoutError extends Error {
  override readonly name = 'StoreTimeoutError';
  constructor(timeoutMs: number) {
    super(`the rate-limit store did not answer within ${timeoutMs}ms`);
  }
}

interface Pending {
  readonly deadline: number;
  settled: boolean;
  reject: (error: Error) => void;
}

/**
 * Bounds how long store calls may take, with one shared interval instead of a timer per call.
 * Every call gets the same timeout, so deadlines arrive in call order and a FIFO queue holds them
 * sorted; each tick expires the overdue head. The interval runs only while calls are in flight.
 * A call is answered between `timeoutMs` and `timeoutMs + tickMs` after it started, plus one turn
 * of the event loop.
 *
 * That turn is what tells a stall of this process from a slow store. After the event loop was
 * blocked (a GC pause, a long synchronous task), timers run before I/O: the tick would fire in
 * the same turn as the replies the store sent in time, which wait unread on the socket, and fail
 * every call in flight. So a tick only marks the overdue calls, and fails them from
 * `setImmediate`, after the poll phase has read what had arrived: one per tick, not per call.
 * A command that had not left this process when the stall began (a decision waiting for the end
 * of the turn to join a batch, or node-redis writing a burst 16 KB a turn) goes out only after it,
 * past its deadline: that call fails, as the timeout says (by this deadline, or by Redis refusing
 * it late), but the store never saw it late. A tick that runs a whole tick late tells such a
 * stall, and {@link heldBack} tells such a call.
 */
export class Deadlines {
  private queue: Pending[] = [];
  private head = 0;
  private timer: NodeJS.Timeout | undefined;
  /** When the interval last ran (or started). */
  private tickedAt = 0;
  /**
   * The latest stall the interval saw: this process was held up after `from` until `until`, and
   * the last tick before it ran at `after`.
   */
  private readonly held = { after: 0, from: 0, until: 0 };
  readonly tickMs: number;

  /** `expired` makes what an overdue call rejects with; a `StoreTimeoutError` unless told. */
  constructor(
    readonly timeoutMs: number,
    private readonly expired: () => Error = () => new StoreTimeoutError(timeoutMs),
  ) {
    this.tickMs = Math.max(2, Math.min(25, Math.ceil(timeoutMs / 4)));
  }

  /**
   * Resolves like `promise`, or rejects with the expiry error once the deadline passes.
   * `onLate` is told the value of a promise that resolves after that rejection: the store did
   * what was asked, although the caller was answered without it; `onLateError`, the error of one
   * that rejects after it.
   */
  race<T>(
    promise: Promise<T>,
    onLate?: (value: T) => void,
    onLateError?: (error: unknown) => void,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const pending: Pending = {
        deadline: performance.now() + this.timeoutMs,
        settled: false,
        reject,
      };
      this.queue.push(pending);
      if (this.timer === undefined) {
        this.tickedAt = pending.deadline - this.timeoutMs;
        this.timer = setInterval(() => this.tick(), this.tickMs).unref();
      }
      promise.then(
        (value) => {
          if (pending.settled) {
            // Only the deadline settles a call before its promise does.
            onLate?.(value);
            return;
          }
          pending.settled = true;
          resolve(value);
        },
        (error: unknown) => {
          if (pending.settled) {
            onLateError?.(error);
            return;
          }
          pending.settled = true;
          reject(error);
        },
      );
    });
  }

  private tick(): void {
    const now = performance.now();
    if (now - this.tickedAt > 2 * this.tickMs) {
      this.held.after = this.tickedAt;
      this.held.from = this.tickedAt + this.tickMs;
      this.held.until = now;
    }
    this.tickedAt = now;
    const queue = this.queue;
    let head = this.head;
    let overdue: Pending[] | undefined;
    while (head < queue.length && (queue[head].settled || queue[head].deadline <= now)) {
      const pending = queue[head++];
      if (!pending.settled) (overdue ??= []).push(pending);
    }
    if (overdue !== undefined) {
      const expiring = overdue;
      setImmediate(() => this.expire(expiring));
    }
    if (head === queue.length) {
      this.queue = [];
      this.head = 0;
      clearInterval(this.timer);
      this.timer = undefined;
    } else if (head > 1024 && head * 2 > queue.length) {
      this.queue = queue.slice(head);
      this.head = 0;
    } else {
      this.head = head;
    }
  }

  /** Fails the overdue calls that the replies read since the tick did not answer. */
  private expire(overdue: readonly Pending[]): void {
    for (const pending of overdue) {
      if (pending.settled) continue;
      pending.settled = true;
      pending.reject(this.expired());
    }
  }

  /**
   * Whether this process held back the call it made at `startedAt`, so that its failure says
   * nothing of the store: its deadline fell while the event loop was blocked, and it was made
   * after the last tick before that, so it may never have left (a call made earlier had a whole
   * turn to go out, and the stall, to read a reply sent in time). Known for the latest stall while
   * calls were in flight, once the tick after it has run, which is before any reply that came
   * meanwhile is read.
   */
  heldBack(startedAt: number): boolean {
    const { after, from, until } = this.held;
    const deadline = startedAt + this.timeoutMs;
    return startedAt >= after && deadline > from && deadline <= until;
  }

  /** Whether the shared interval is running: only while some call is in flight. */
  get ticking(): boolean {
    return this.timer !== undefined;
  }

  /** Stops the interval; pending calls keep their own outcome. */
  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}

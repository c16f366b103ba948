import { type ScriptClient } from '../clients/script-client.js';
import { DECISION_LIBRARY } from './scripts.js';

// After a failed ask, decisions go on with id keys, and ask again no sooner than this.
const ASK_AGAIN_MS = 10_000;

/** What a decision sent under an epoch the library's memory no longer has is answered. */
export const EPOCH_CHANGED = -3;

/** Whether `reply` (a decision's or a batch's) says it came under an ended epoch: `{ -3, now }`. */
export function isEpochChanged(reply: unknown): boolean {
  return Array.isArray(reply) && reply.length === 2 && Number(reply[0]) === EPOCH_CHANGED;
}

/**
 * Redis no longer remembers the decisions this instance sent under the epoch it knew (a restart,
 * a failover, a library loaded afresh): a decision sent under it may be a copy of one that was
 * applied there, so it applied nothing, and the fallback answers it as a late one.
 */
export class StoreEpochError extends Error {
  override readonly name = 'StoreEpochError';
  constructor() {
    super(
      'Redis no longer holds the decisions sent before it restarted or failed over; nothing was recorded',
    );
  }
}

/**
 * The epoch of the function library's memory on a single server, which decisions that keep their
 * ids there carry (see `recall` in once.lua): such a decision needs no id key, so a decision
 * writes nothing to Redis beyond its state. Known once asked, after each (re)connection and after
 * a decision finds another; until then decisions carry id keys, as scripts always do.
 *
 * A cluster's decisions keep their id keys: a slot that moves takes its keys to another node,
 * but not what the node it left remembers.
 */
export class LibraryMemory {
  private current: string | undefined;
  private asking: Promise<void> | undefined;
  private stopListening: (() => void) | undefined;
  /** After an ask that failed (an ACL that refuses FCALL_RO), when a decision may ask again. */
  private askAgainAt = 0;
  private readyCount = 0;

  /** `usesFunctions`: whether decisions go out as FCALL now. */
  constructor(
    private readonly client: ScriptClient,
    private readonly usesFunctions: () => boolean,
  ) {}

  /**
   * How many times the client has connected since the store began listening: a call answered on
   * the connection it was sent on, when this has not changed meanwhile, was sent once, since a
   * client sends a command again only on a new connection.
   */
  get connection(): number {
    return this.readyCount;
  }

  /**
   * The epoch to send decisions under, or undefined while unknown (they carry id keys then, and it
   * is asked for).
   */
  get epoch(): string | undefined {
    if (
      this.current === undefined &&
      this.asking === undefined &&
      performance.now() >= this.askAgainAt
    ) {
      void this.learn();
    }
    return this.current;
  }

  /** Asks the server for the epoch, where its decisions can use it; resolves whatever happens. */
  learn(): Promise<void> {
    if (this.client.nodeOf !== undefined || !this.usesFunctions()) return Promise.resolve();
    // A reconnection may be to another server, or to this one restarted.
    this.stopListening ??= this.client.onReady(() => {
      this.readyCount++;
      this.forget();
    });
    // FCALL_RO: it writes nothing, and is not counted among the decisions.
    this.asking ??= this.client
      .command(['FCALL_RO', DECISION_LIBRARY.epochFn, '0'])
      .then(
        (epoch) => {
          // 0: this user may not read TIME; its decisions carry their own clock and id keys.
          if (typeof epoch === 'number' && epoch > 0) this.current = String(epoch);
          else this.askAgainAt = performance.now() + ASK_AGAIN_MS;
        },
        () => {
          this.askAgainAt = performance.now() + ASK_AGAIN_MS;
        },
      )
      .finally(() => (this.asking = undefined));
    return this.asking;
  }

  /** Stops sending under the epoch known, and asks again. */
  forget(): void {
    this.current = undefined;
    void this.learn();
  }

  /** Stops listening to the client. */
  close(): void {
    this.stopListening?.();
  }
}

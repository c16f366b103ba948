import { type ScriptClient } from './clients/script-client.js';
import { isError } from '../errors.js';

/** A decision was in flight when its connection closed: Redis may have run it. */
export class ConnectionLostError extends Error {
  override readonly name = 'ConnectionLostError';
  constructor() {
    super('the connection closed before the reply arrived');
  }
}

// What each library rejects a command with when its connection breaks before the reply came:
// ioredis once it gives the command up, node-redis for every command awaiting a reply, GLIDE
// (a ConnectionError) for every command awaiting a reply, which it does not send again. GLIDE
// also gives a command up after its requestTimeout (250 ms by default) while the caller may still
// wait: Redis may run it all the same.
const LOST_MESSAGE =
  /^(Connection is closed|Reached the max retries per request|Socket closed unexpectedly|Received connection error|timed out$)/;
const LOST_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'ETIMEDOUT']);

/**
 * Whether `error` says the connection broke with the command in flight, so that Redis may have
 * run it without its reply arriving; not an error Redis answered, nor a command never sent.
 */
export function lostInFlight(error: unknown): boolean {
  if (!isError(error)) return false;
  if (error instanceof ConnectionLostError) return true;
  const code = (error as NodeJS.ErrnoException).code;
  return (code !== undefined && LOST_CODES.has(code)) || LOST_MESSAGE.test(error.message);
}

// A decision whose reply was lost is sent again at most this many times.
const MAX_RESENDS = 2;

/**
 * Sends a decision again (`send`) when its connection broke before the reply came (Redis may have
 * run it), once the client is ready, at most {@link MAX_RESENDS} times and never after `untilMs`
 * (`performance.now()` time). The copy has the same id and arguments, so Redis answers it with
 * what it decided the first time, if it did, and applies nothing twice. Any other failure, and
 * the last, is the caller's.
 */
export async function sendAgain(
  error: unknown,
  send: () => Promise<unknown>,
  reconnected: ReconnectWaiters,
  untilMs: number,
): Promise<unknown> {
  for (let resends = 0; resends < MAX_RESENDS && lostInFlight(error); resends++) {
    if (!(await reconnected.ready(untilMs))) break;
    try {
      return await send();
    } catch (next) {
      error = next;
    }
  }
  throw error;
}

/** Sends a decision, and sends it again as {@link sendAgain} does when its reply was lost. */
export async function sendResending(
  send: () => Promise<unknown>,
  reconnected: ReconnectWaiters,
  untilMs: number,
): Promise<unknown> {
  try {
    return await send();
  } catch (error) {
    return sendAgain(error, send, reconnected, untilMs);
  }
}

// As ONCE_MARGIN_MS in decide.lua: how long past a decision's deadline Redis keeps its id.
const ID_KEPT_PAST_DEADLINE_MS = 500;

/**
 * A decision whose reply was lost, and that could not be sent again in time (the client was still
 * reconnecting at `deadlineMs`, `performance.now()` time, or every copy was lost too), is answered
 * by the fallback, while Redis may have run it. From the deadline on, once the client is back and
 * while Redis still keeps the decision's id, one more copy (`send`) asks: past the deadline it
 * applies nothing whatever happened, and it answers what Redis decided if Redis ran the decision.
 * Resolves with that reply, for the caller to undo as a late reply is, and with undefined when
 * the decision never ran or nothing could be learnt (then a decision Redis ran stays counted);
 * undefined at once for an error that lost no reply. Only for a decision sent with a deadline: a
 * copy without one would decide afresh, and so would one sent before the deadline, which is why a
 * decision that failed earlier waits for it (a timer, on this rare path only).
 */
export function replyIfRun(
  error: unknown,
  send: () => Promise<unknown>,
  reconnected: ReconnectWaiters,
  deadlineMs: number,
): Promise<number[] | undefined> | undefined {
  if (!lostInFlight(error)) return undefined;
  const untilMs = deadlineMs + ID_KEPT_PAST_DEADLINE_MS;
  const ask = async (): Promise<number[] | undefined> => {
    if (!(await reconnected.ready(untilMs))) return undefined;
    // A copy whose reply is lost too is sent again, as the decision was, while the id is kept.
    const reply = (await sendResending(send, reconnected, untilMs)) as number[];
    // -1: Redis holds no id, so the decision never ran (or its id is gone): nothing to undo.
    return reply[0] >= 0 ? reply : undefined;
  };
  const early = deadlineMs - performance.now();
  // A timer may fire up to a millisecond before its time as performance.now() counts it.
  const asked =
    early > 0
      ? new Promise<void>((resolve) => setTimeout(resolve, Math.ceil(early) + 1).unref()).then(ask)
      : ask();
  // A copy that fails too leaves the decision as it was.
  return asked.catch(() => undefined);
}

interface Waiter {
  readonly untilMs: number;
  readonly resolve: (ready: boolean) => void;
}

/**
 * Decisions waiting for their client to be ready again, each until its own deadline. One listener
 * on the client's `ready` event wakes them all, and one timer, armed for the earliest deadline,
 * gives up on the late ones: nothing per decision.
 */
export class ReconnectWaiters {
  private waiting: Waiter[] = [];
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private listening = false;

  constructor(private readonly client: ScriptClient) {}

  /**
   * Resolves true once the client is ready (at once if it is), or false when `untilMs`
   * (`performance.now()` time) comes first.
   */
  ready(untilMs: number): Promise<boolean> {
    if (this.client.ready()) return Promise.resolve(true);
    if (performance.now() >= untilMs) return Promise.resolve(false);
    if (!this.listening) {
      this.listening = true;
      this.client.onReady(() => this.wake());
    }
    return new Promise((resolve) => {
      this.waiting.push({ untilMs, resolve });
      if (untilMs < this.timerAt) this.arm(untilMs);
    });
  }

  private wake(): void {
    if (this.waiting.length === 0 || !this.client.ready()) return;
    const waiting = this.waiting;
    this.waiting = [];
    this.disarm();
    const now = performance.now();
    for (const waiter of waiting) waiter.resolve(now < waiter.untilMs);
  }

  private expire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = performance.now();
    let next = Infinity;
    this.waiting = this.waiting.filter((waiter) => {
      if (waiter.untilMs > now) {
        next = Math.min(next, waiter.untilMs);
        return true;
      }
      waiter.resolve(false);
      return false;
    });
    if (next < Infinity) this.arm(next);
  }

  private arm(atMs: number): void {
    this.disarm();
    this.timerAt = atMs;
    this.timer = setTimeout(() => this.expire(), Math.max(0, atMs - performance.now())).unref();
  }

  private disarm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }
}

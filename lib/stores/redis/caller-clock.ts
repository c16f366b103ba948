import { Logger } from '@nestjs/common';
import { type ScriptClient } from './clients/script-client.js';

/** What `decide.lua` answers, and does nothing, when the server refuses `TIME` inside scripts. */
export const TIME_REFUSED = -2;

/** The section of the docs that explains the warning. */
export const CLOCK_DOCS = 'nest-rate-limit/docs/redis.md#clock';

/** Where the estimate of Redis's clock was read. */
type Source = 'TIME' | 'INFO server' | 'this machine';

const logger = new Logger('RateLimit');

// The server's time is read again this often, in the background, so that the local monotonic
// clock drifting from Redis's (by up to some 50 ppm where nothing disciplines it) stays below 3 ms.
const READ_EVERY_MS = 60_000;

/**
 * Redis's clock as this process estimates it, for a server that refuses `TIME` inside scripts
 * (some managed services do): decisions then carry the time themselves (`c<now µs>:<deadline µs>`,
 * see `decide.lua`), and Redis applies them as it would at that time. The server's time is read
 * once per connection (and every minute), outside scripts: `TIME`, or where that is refused too,
 * `INFO server`'s `server_time_usec`; then the local monotonic clock counts on from the moment the
 * reply arrived.
 * Redis read its time before that moment, so the estimate is early by at most one round trip,
 * never late, and deadlines built on it are early too, as those built on Redis's replies are.
 * Where neither can be read, this machine's clock stands in, and decisions carry no deadline: one
 * on a clock unrelated to Redis's could not be checked there.
 *
 * Unused, and costing nothing, until a decision is answered {@link TIME_REFUSED}; then one warning
 * says so.
 */
export class CallerClock {
  private refused = false;
  private source: Source | undefined;
  private baseUs = 0;
  private readAtMs = 0;
  private stale = true;
  private reading: Promise<void> | undefined;

  constructor(private readonly client: ScriptClient) {}

  /** Whether decisions carry this clock: the server refused `TIME` inside scripts. */
  get inUse(): boolean {
    return this.refused;
  }

  /**
   * What a decision must wait for before it is sent: the read of the clock when there is none yet
   * for this connection, else nothing (undefined). Starts the periodic read in the background when
   * it is due.
   */
  fresh(): Promise<void> | undefined {
    if (this.stale) return this.read();
    if (performance.now() - this.readAtMs > READ_EVERY_MS && this.client.ready()) {
      this.reading ??= this.readServerTime()
        .catch(() => {})
        .finally(() => {
          this.reading = undefined;
        });
    }
    return undefined;
  }

  /**
   * Switches decisions to this clock, after the server answered {@link TIME_REFUSED}, and reads
   * it. Idempotent: the decisions that meet the refusal at once share one read and one warning.
   */
  async adopt(): Promise<void> {
    if (!this.refused) {
      this.refused = true;
      // A reconnection may reach another server (a failover): its clock is read again.
      this.client.onReady(() => {
        this.stale = true;
      });
    }
    await this.read();
  }

  /** Reads the server's clock if it must be; shared by the decisions waiting meanwhile. */
  private read(): Promise<void> {
    if (!this.stale) return Promise.resolve();
    this.reading ??= this.readServerTime().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  /**
   * The clock argument of a decision sent now, whose caller waits `timeoutMs` from `sinceMs`
   * (`performance.now()` time): the estimate now, and the deadline.
   */
  arg(sinceMs: number, timeoutMs: number | undefined): string {
    const nowUs = this.estimate(performance.now());
    const noDeadline = timeoutMs === undefined || this.source === 'this machine';
    return `c${nowUs}:${noDeadline ? '' : this.estimate(sinceMs) + timeoutMs * 1000}`;
  }

  /** The estimate of Redis's clock now, in µs. */
  nowUs(): number {
    return this.estimate(performance.now());
  }

  private estimate(atMs: number): number {
    return this.baseUs + Math.floor((atMs - this.readAtMs) * 1000);
  }

  private async readServerTime(): Promise<void> {
    const first = this.source === undefined;
    let source: Source = 'TIME';
    let us = await this.ask(['TIME'], (reply) =>
      Array.isArray(reply) ? Number(reply[0]) * 1_000_000 + Number(reply[1]) : NaN,
    );
    if (us === undefined) {
      source = 'INFO server';
      us = await this.ask(['INFO', 'server'], (reply) =>
        Number(/server_time_usec:(\d+)/.exec(String(reply))?.[1] ?? NaN),
      );
    }
    const readAtMs = performance.now();
    if (us === undefined) {
      source = 'this machine';
      us = Math.floor((performance.timeOrigin + readAtMs) * 1000);
    }
    this.baseUs = us;
    this.readAtMs = readAtMs;
    this.source = source;
    this.stale = false;
    if (first) logger.warn(warning(source));
  }

  /**
   * The time (µs) in the reply to `command`, or undefined when the server refused it or the reply
   * holds none. A failure while the client is not connected is the caller's: nothing was refused.
   */
  private async ask(
    command: readonly string[],
    parse: (reply: unknown) => number,
  ): Promise<number | undefined> {
    try {
      const us = parse(await this.client.command(command));
      return Number.isFinite(us) && us > 0 ? us : undefined;
    } catch (error) {
      if (!this.client.ready()) throw error;
      return undefined;
    }
  }
}

function warning(source: Source): string {
  const refused = 'Redis refuses TIME inside scripts';
  if (source === 'this machine') {
    return (
      `${refused}, and its time cannot be read (TIME and INFO are refused): decisions carry this ` +
      `machine's clock, and no answer deadline, so instances agree only as well as their clocks ` +
      `do. See ${CLOCK_DOCS}`
    );
  }
  return (
    `${refused}: decisions carry this instance's estimate of Redis's clock, read with ` +
    `${source} on each connection. See ${CLOCK_DOCS}`
  );
}

import { monotonicClock } from '../clock.js';

/** Redis ran a decision after its caller had stopped waiting for it; it recorded nothing. */
export class StoreLateError extends Error {
  override readonly name = 'StoreLateError';
  constructor() {
    super('Redis reached the decision after its caller stopped waiting; nothing was recorded');
  }
}

// Redis's clock and this process's may be stepped apart (NTP, a failover to another host). The
// estimate is the best of this period and the one before, so a step back is followed within two
// periods, while one slow reply at the start of a period never spoils it.
const ESTIMATE_PERIOD_MS = 10_000;

const localMicros = () => monotonicClock() * 1000;

/**
 * The moment, on Redis's own clock, after which a decision's caller no longer waits for it, so
 * that the script can refuse to record a decision that arrives later than that. A decision sent
 * at local time `t` is answered by the fallback at `t + timeout` at the earliest; in Redis's time
 * that is `t + timeout + offset`, where offset is Redis's clock minus this process's.
 *
 * Each reply carries Redis's time when it ran. Redis ran it before the reply arrived, so
 * `redisNow - arrival` is never above the true offset: the largest such value seen is a lower
 * bound, which can only make the deadline early (refusing a decision that was in fact still
 * awaited, which the fallback then answers) and never late.
 */
export class AnswerDeadline {
  /** The best lower bound of Redis's clock minus this process's, in µs. */
  private offsetUs: number | undefined;
  private thisPeriodUs = -Infinity;
  private lastPeriodUs = -Infinity;
  private periodEndsUs = 0;
  private readonly timeoutUs: number;

  constructor(readonly timeoutMs: number) {
    this.timeoutUs = timeoutMs * 1000;
  }

  private lastMs = NaN;
  private lastArg = '';

  /**
   * The deadline for a decision sent now, in µs as the script reads it, or `''` while Redis's
   * clock has not been seen yet. Rounded down to the millisecond (early, never late), so that the
   * decisions of one millisecond share one string instead of formatting a number each.
   */
  forNow(): string {
    if (this.offsetUs === undefined) return '';
    const ms = Math.floor((localMicros() + this.timeoutUs + this.offsetUs) / 1000);
    if (ms !== this.lastMs) {
      this.lastMs = ms;
      this.lastArg = `${ms}000`;
    }
    return this.lastArg;
  }

  /**
   * Redis's clock now as the replies seen so far tell it (early by up to a round trip), in µs;
   * undefined before the first.
   */
  redisNowUs(): number | undefined {
    return this.offsetUs === undefined ? undefined : Math.floor(localMicros() + this.offsetUs);
  }

  /** Learns from a reply: `redisNowUs` is the time Redis ran the script. */
  observe(redisNowUs: number): void {
    const arrived = localMicros();
    const offset = redisNowUs - arrived;
    if (arrived > this.periodEndsUs) {
      this.lastPeriodUs = this.thisPeriodUs;
      this.thisPeriodUs = offset;
      this.periodEndsUs = arrived + ESTIMATE_PERIOD_MS * 1000;
    } else if (offset > this.thisPeriodUs) {
      this.thisPeriodUs = offset;
    }
    this.offsetUs = Math.max(this.thisPeriodUs, this.lastPeriodUs);
  }
}

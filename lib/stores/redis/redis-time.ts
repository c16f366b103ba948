import { monotonicClock, toMicros } from '../clock.js';
import { type Clock } from '../../store-contract/store.interface.js';
import { type ScriptClient } from './clients/script-client.js';
import { AnswerDeadline } from './answer-deadline.js';
import { CallerClock } from './caller-clock.js';

// Redis expires keys in real time; under a simulated clock, pad TTLs by this much so a key cannot
// vanish while the simulated time says it still matters.
const SIMULATED_CLOCK_TTL_SLACK_MS = 600_000;

/**
 * Redis's clock as one store knows it, and the time a decision carries: a simulated clock (for
 * tests), else the estimate decisions carry where Redis refuses `TIME` in scripts
 * (`CallerClock`), else Redis's own, learnt from the time each reply carries (`AnswerDeadline`,
 * which also sets how long Redis may still apply a decision).
 */
export class RedisTime {
  /** Where Redis refuses `TIME` inside scripts: the clock decisions carry instead. */
  readonly callerClock: CallerClock;
  private deadline: AnswerDeadline | undefined;

  constructor(
    scripts: ScriptClient,
    private readonly clock: Clock | undefined,
    answerWithinMs: number | undefined,
  ) {
    this.callerClock = new CallerClock(scripts);
    // A simulated clock has no relation to the time at which Redis runs the script.
    if (answerWithinMs !== undefined) this.answerWithinByDefault(answerWithinMs);
  }

  /** Sets how long Redis may still apply a decision, when nothing set it yet. */
  answerWithinByDefault(ms: number): void {
    if (this.deadline === undefined && this.clock === undefined) {
      this.deadline = new AnswerDeadline(ms);
    }
  }

  /** How long a caller waits for a decision, when decisions carry a deadline. */
  get timeoutMs(): number | undefined {
    return this.deadline?.timeoutMs;
  }

  /** Whether decisions carry a deadline (once Redis's clock has been seen). */
  get hasDeadline(): boolean {
    return this.deadline !== undefined;
  }

  /** Learns Redis's clock from a reply: `redisNowUs` is the time Redis ran the script. */
  observe(redisNowUs: number): void {
    this.deadline?.observe(redisNowUs);
  }

  /**
   * The best estimate of Redis's clock, in µs, for the windows of calendar policies (see
   * `policyArg`): the simulated clock, else the one decisions carry where Redis refuses TIME,
   * else this machine's corrected by the offset Redis's replies showed, else this machine's. The
   * script picks the window that holds its own now among three around this estimate.
   */
  readonly nowUs = (): number => {
    if (this.clock !== undefined) return toMicros(this.clock());
    if (this.callerClock.inUse) return this.callerClock.nowUs();
    return this.deadline?.redisNowUs() ?? toMicros(monotonicClock());
  };

  /**
   * Redis's clock minus this process's monotonic clock, in µs, as far as the replies tell (early
   * by up to their quickest way back, never late); undefined before any reply has told it, and on
   * a simulated clock, which runs apart from this process's.
   */
  offsetUs(): number | undefined {
    if (this.clock !== undefined) return undefined;
    const redisNowUs = this.callerClock.inUse
      ? this.callerClock.nowUs()
      : this.deadline?.redisNowUs();
    return redisNowUs === undefined ? undefined : redisNowUs - toMicros(monotonicClock());
  }

  /** The clock argument (see `decide.lua`) of a decision whose caller waits since `sentAt`. */
  arg(sentAt: number, correction?: true): string {
    if (this.clock !== undefined) {
      return `t${toMicros(this.clock())}:${SIMULATED_CLOCK_TTL_SLACK_MS}`;
    }
    if (this.callerClock.inUse) {
      return this.callerClock.arg(sentAt, correction ? undefined : this.deadline?.timeoutMs);
    }
    return correction ? '' : (this.deadline?.forNow() ?? '');
  }
}

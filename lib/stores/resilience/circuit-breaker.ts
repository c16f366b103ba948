import { type BreakerState } from '../../store-contract/health-change.js';

/**
 * Stops calling a failing store for a short, growing back-off, then lets one probe through.
 * Closed: every call goes to the store. After `failures` failures in a row it opens: calls skip
 * the store until the back-off ends, then exactly one probe goes through. A probe that succeeds
 * closes it; one that fails reopens it with twice the back-off, up to `maxOpenMs`.
 */
export class CircuitBreaker {
  private consecutiveFailures = 0;
  private openUntil = 0;
  private openMs: number;
  private probing = false;

  constructor(
    private readonly failures = 3,
    private readonly minOpenMs = 50,
    private readonly maxOpenMs = 250,
    /** Told each time the state changes. */
    private readonly onChange?: (state: BreakerState) => void,
  ) {
    this.openMs = minOpenMs;
  }

  /** Whether this call may go to the store. Claims the probe when the back-off has ended. */
  allow(now: number): boolean {
    if (this.consecutiveFailures < this.failures) return true;
    if (this.probing || now < this.openUntil) return false;
    this.probing = true;
    this.onChange?.('half_open');
    return true;
  }

  /** Whether the breaker is open (or probing): the store is considered down. */
  get open(): boolean {
    return this.consecutiveFailures >= this.failures;
  }

  /** Where the breaker stands, for health reports. */
  get state(): BreakerState {
    if (!this.open) return 'closed';
    return this.probing ? 'half_open' : 'open';
  }

  success(): void {
    if (this.onChange !== undefined && this.open) this.onChange('closed');
    this.consecutiveFailures = 0;
    this.openMs = this.minOpenMs;
    this.probing = false;
  }

  failure(now: number): void {
    if (this.probing) {
      this.probing = false;
      this.openMs = Math.min(this.openMs * 2, this.maxOpenMs);
      this.openUntil = now + this.openMs;
      this.onChange?.('open');
      return;
    }
    this.consecutiveFailures++;
    if (this.consecutiveFailures === this.failures) {
      this.openUntil = now + this.openMs;
      this.onChange?.('open');
    }
  }

  /**
   * A call ended without saying anything about the store (it failed for a reason of its own): if
   * it was the probe, the next call may probe.
   */
  release(): void {
    this.probing = false;
  }

  /** Milliseconds until the next probe may go through. */
  waitMs(now: number): number {
    return Math.max(0, this.openUntil - now);
  }
}

import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { algorithmOf } from '../algorithms/registry.js';
import { leaseOf } from '../stores/decision.js';
import { type CallStore, type Limits } from '../store-contract/store-call.js';
import { type RateLimitDecision } from '../store-contract/store.interface.js';
import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import { RATE_LIMIT_CALL_STORE, RATE_LIMIT_TELEMETRY } from '../rate-limit.constants.js';
import { NO_TELEMETRY, type RateLimitTelemetry } from '../telemetry/rate-limit-telemetry.js';

/** Concurrency leases one call holds, under one decision. */
export interface HeldLease {
  readonly limits: Limits;
  readonly decision: RateLimitDecision;
  /** The policy that took the lease (the shortest period, when several do). */
  readonly policy: ResolvedPolicy;
  /** When to renew next (`performance.now()` ms), and how often. */
  renewAt: number;
  readonly everyMs: number;
  /** True while nothing has taken charge of freeing the lease; such a lease is freed, not renewed. */
  readonly unclaimed: (() => boolean) | undefined;
  released: boolean;
}

// Renewed when a third of the lease's life has passed, so one failed renewal still leaves time.
const RENEWALS_PER_PERIOD = 3;
// A renewal that failed is tried again this soon (or at its next turn, if sooner).
const RENEW_RETRY_MS = 100;
const logger = new Logger('RateLimit');

/**
 * Holds this instance's concurrency leases: renews each one while it is held, with one timer for
 * all of them, and frees it when its holder is done, waking this instance's waiters for those
 * keys at once. Instances that take no lease never arm the timer.
 */
@Injectable()
export class LeaseKeeper {
  private readonly held = new Set<HeldLease>();
  private readonly waiters = new Map<string, Set<() => void>>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private warnings = 0;
  private closed = false;

  constructor(
    @Inject(RATE_LIMIT_CALL_STORE) private readonly store: CallStore,
    @Optional()
    @Inject(RATE_LIMIT_TELEMETRY)
    private readonly telemetry: RateLimitTelemetry = NO_TELEMETRY,
  ) {}

  /**
   * Starts holding the leases `decision` took, if any; undefined when it took none. `unclaimed`
   * tells whether the call is still waiting for someone to free the lease at its end: if it
   * still is at the first renewal, the call was turned away after the guard, and the lease is
   * freed instead.
   */
  hold(
    limits: Limits,
    decision: RateLimitDecision,
    unclaimed?: () => boolean,
  ): HeldLease | undefined {
    if (leaseOf(decision) === undefined) return undefined;
    if (this.closed) {
      // Taken by a call that was still waiting when the app shut down: nobody will end it.
      void this.store.execute({ op: 'release', limits, of: decision }).catch(() => {});
      return undefined;
    }
    const { policies } = limits;
    let policy = policies[0];
    let periodMs = Infinity;
    for (const p of policies) {
      if (algorithmOf(p.algorithm).holdsLeases && p.periodMs < periodMs) {
        periodMs = p.periodMs;
        policy = p;
      }
    }
    const everyMs = periodMs / RENEWALS_PER_PERIOD;
    const lease: HeldLease = {
      limits,
      decision,
      policy,
      renewAt: performance.now() + everyMs,
      everyMs,
      unclaimed,
      released: false,
    };
    this.held.add(lease);
    this.telemetry.leases(policy, 1);
    if (lease.renewAt < this.timerAt) this.arm(lease.renewAt);
    return lease;
  }

  /** Frees a lease once; never rejects (a failure is logged, and the lease expires on its own). */
  async release(lease: HeldLease | undefined): Promise<void> {
    if (lease === undefined || lease.released) return;
    lease.released = true;
    this.drop(lease);
    try {
      await this.store.execute({ op: 'release', limits: lease.limits, of: lease.decision });
    } catch (error) {
      this.warn(
        `Freeing a concurrency lease failed; it frees itself within its period: ${String(error)}`,
      );
    }
    for (const key of lease.limits.keys) this.wake(key);
  }

  /** Calls `listener` once a lease on one of `keys` is freed here; returns how to stop listening. */
  onRelease(keys: readonly string[], listener: () => void): () => void {
    for (const key of keys) {
      let set = this.waiters.get(key);
      if (set === undefined) this.waiters.set(key, (set = new Set()));
      set.add(listener);
    }
    return () => {
      for (const key of keys) {
        const set = this.waiters.get(key);
        set?.delete(listener);
        if (set?.size === 0) this.waiters.delete(key);
      }
    };
  }

  /**
   * Wakes the callers waiting on `keys` here: room was made there otherwise than by a release (a
   * request whose outcome was waited for has ended).
   */
  roomMade(keys: readonly string[]): void {
    for (const key of keys) this.wake(key);
  }

  /** Leases held now. */
  get size(): number {
    return this.held.size;
  }

  /** Frees every lease still held, so other instances need not wait for them to expire. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
    await Promise.all([...this.held].map((lease) => this.release(lease)));
  }

  /** Stops holding a lease; a lease lost before its release is not counted out twice. */
  private drop(lease: HeldLease): void {
    if (this.held.delete(lease)) this.telemetry.leases(lease.policy, -1);
  }

  private wake(key: string): void {
    const set = this.waiters.get(key);
    if (set === undefined) return;
    this.waiters.delete(key);
    for (const listener of set) listener();
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.tick(), Math.max(0, at - performance.now()));
    // Held leases must not keep a process alive that has nothing else to do.
    this.timer.unref();
  }

  private tick(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = performance.now();
    let next = Infinity;
    for (const lease of this.held) {
      if (lease.renewAt <= now) {
        if (lease.unclaimed?.() === true) {
          void this.release(lease);
          continue;
        }
        lease.renewAt = now + lease.everyMs;
        this.renew(lease);
      }
      if (lease.renewAt < next) next = lease.renewAt;
    }
    if (next < Infinity) this.arm(next);
  }

  private renew(lease: HeldLease): void {
    if (this.closed) return;
    this.store
      .execute({ op: 'renew', limits: lease.limits, of: lease.decision })
      .then((renewed) => {
        if (renewed.allowed || lease.released) return;
        // Expired (the process stalled for a whole period) or reset: the slot may be someone
        // else's now, so holding on would only hide that.
        this.drop(lease);
        this.warn(
          `A concurrency lease on ${lease.limits.keys.join(', ')} was lost before its holder finished`,
        );
      })
      .catch((error: unknown) => {
        this.warn(`Renewing a concurrency lease failed; retrying: ${String(error)}`);
        // Soon, not a third of a period later: the lease must not run out while the store is back.
        if (lease.released || this.closed) return;
        lease.renewAt = Math.min(lease.renewAt, performance.now() + RENEW_RETRY_MS);
        if (lease.renewAt < this.timerAt) this.arm(lease.renewAt);
      });
  }

  private warn(message: string): void {
    if (this.warnings++ < 5) logger.warn(message);
  }
}

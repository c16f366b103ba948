import { type ResolvedPolicy } from '../rate-limit.policy.js';
import { CircuitBreaker } from './circuit-breaker.js';
import { degradedDecision } from './decision.js';
import { Deadlines } from './deadlines.js';
import { giveBackLate } from './late-replies.js';
import {
  type RateLimitDecision,
  type RateLimitStore,
  type StoreErrorHandler,
  type StoreErrorPolicy,
  type StoreOperation,
  invoke,
  type OperationExtras,
} from './store.interface.js';

/** Where outage warnings go: the module passes its Nest `Logger`. */
export interface OutageLogger {
  warn(message: string): void;
  log(message: string): void;
}

export interface ResilientStoreOptions {
  /** Longest wait for the primary store, in ms. */
  timeoutMs: number;
  /** What answers while the primary store fails, or a handler told each error that picks it. */
  onStoreError: StoreErrorPolicy | StoreErrorHandler;
  /** Answers when `onStoreError` is `'memory'`. */
  fallback: RateLimitStore;
  /** Close the primary store in `close()`. */
  ownsPrimary: boolean;
  logger: OutageLogger;
}

// A rejected answer while the store is down tells the client to come back after this long at least.
const DENY_RETRY_MS = 1000;

/**
 * Puts a bound on every decision and keeps answering when the primary store (Redis) fails:
 * each call gets `timeoutMs`, failures open a circuit breaker so a dead store is not waited on,
 * and meanwhile `onStoreError` decides: the memory store limits per instance, or everything is
 * allowed, or everything is denied. A probe goes through every few hundred ms; when it succeeds,
 * shared limiting resumes.
 */
export class ResilientStore implements RateLimitStore {
  private readonly deadlines: Deadlines;
  private readonly breaker = new CircuitBreaker();
  private outageStartedAt: number | undefined;
  private degradedDecisions = 0;
  /** The answer while degraded: fixed, or what the handler chose for the latest error. */
  private policy: StoreErrorPolicy;

  constructor(
    readonly primary: RateLimitStore,
    private readonly options: ResilientStoreOptions,
  ) {
    this.deadlines = new Deadlines(options.timeoutMs);
    this.policy = typeof options.onStoreError === 'function' ? 'memory' : options.onStoreError;
  }

  consume(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
  ): Promise<RateLimitDecision> {
    return this.call('consume', keys, policies, costs);
  }

  peek(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
  ): Promise<RateLimitDecision> {
    return this.call('peek', keys, policies, costs);
  }

  /**
   * Gives back to the primary store, or to the store that counted the request: a request the
   * memory fallback answered is given back there, and one that `'allow'` or `'deny'` answered
   * was never counted.
   */
  refund(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    of?: RateLimitDecision,
  ): Promise<RateLimitDecision> {
    if (of?.degraded === 'memory') {
      return invoke(this.options.fallback, 'refund', keys, policies, costs, { of });
    }
    if (of?.degraded !== undefined) return Promise.resolve(of);
    return this.call('refund', keys, policies, costs, { of });
  }

  reset(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
  ): Promise<RateLimitDecision> {
    return this.call('reset', keys, policies, costs);
  }

  reserve(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    maxWaitMs: number,
  ): Promise<RateLimitDecision> {
    return this.call('reserve', keys, policies, costs, { maxWaitMs });
  }

  /** Frees leases where they were taken: in the fallback for a lease it handed out. */
  release(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    of: RateLimitDecision,
  ): Promise<RateLimitDecision> {
    return this.onLease('release', keys, policies, costs, of);
  }

  renew(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    of: RateLimitDecision,
  ): Promise<RateLimitDecision> {
    return this.onLease('renew', keys, policies, costs, of);
  }

  private onLease(
    op: 'release' | 'renew',
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    of: RateLimitDecision,
  ): Promise<RateLimitDecision> {
    if (of.degraded === 'memory') {
      return invoke(this.options.fallback, op, keys, policies, costs, { of });
    }
    // `'allow'` and `'deny'` took no lease.
    if (of.degraded !== undefined) return Promise.resolve(of);
    // The lease is in the primary store and nowhere else: a failure is reported, not answered by
    // the fallback, which knows nothing of it (the holder retries, or the lease expires).
    return this.deadlines.race(invoke(this.primary, op, keys, policies, costs, { of }));
  }

  block(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    durationMs: number,
  ): Promise<RateLimitDecision> {
    return this.call('block', keys, policies, [], { durationMs });
  }

  private async call(
    op: StoreOperation,
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    extras?: OperationExtras,
  ): Promise<RateLimitDecision> {
    // A store that lacks the method is a mistake to report, not an outage to fall back from.
    if (op !== 'consume' && typeof this.primary[op] !== 'function') {
      return invoke(this.primary, op, keys, policies, costs, extras);
    }
    if (!this.breaker.allow(performance.now())) {
      return this.degrade(keys, policies, costs, op, extras);
    }
    let decision: RateLimitDecision;
    try {
      const pending = invoke(this.primary, op, keys, policies, costs, extras);
      decision = await this.deadlines.race(
        pending,
        this.lateReplyHandler(op, keys, policies, costs),
      );
    } catch (error) {
      this.breaker.failure(performance.now());
      this.policy = this.choosePolicy(error);
      this.outageBegins(error);
      return this.degrade(keys, policies, costs, op, extras);
    }
    this.breaker.success();
    if (this.outageStartedAt !== undefined) this.outageEnds();
    return decision;
  }

  /**
   * What to do with a reply that comes after the timeout: a consume or reserve it recorded is
   * given back, since the fallback answered (and counted) that request instead.
   */
  private lateReplyHandler(
    op: StoreOperation,
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
  ): ((late: RateLimitDecision) => void) | undefined {
    if (op !== 'consume' && op !== 'reserve') return undefined;
    return (late) => giveBackLate(this.primary, keys, policies, costs, late);
  }

  /** Whether the primary store is currently considered down. */
  get degraded(): boolean {
    return this.outageStartedAt !== undefined;
  }

  async close(): Promise<void> {
    this.deadlines.close();
    await this.options.fallback.close?.();
    if (this.options.ownsPrimary) await this.primary.close?.();
  }

  /**
   * Answers as `onStoreError` says, without the primary store: what a failed call gets. With
   * `'memory'`, the fallback does what was asked of the primary (a refund gives back what the
   * fallback counted meanwhile).
   */
  async degrade(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    op: StoreOperation = 'consume',
    extras?: OperationExtras,
  ): Promise<RateLimitDecision> {
    this.degradedDecisions++;
    const policy = this.policy;
    if (policy === 'memory') {
      const { fallback } = this.options;
      const decided = await invoke(fallback, op, keys, policies, costs, extras);
      return degradedDecision(decided, policy);
    }
    const allowed = policy === 'allow';
    const retryAfterMs = allowed
      ? 0
      : Math.max(DENY_RETRY_MS, this.breaker.waitMs(performance.now()));
    const answers = policies.map((p) => ({
      policy: p,
      allowed,
      limit: p.threshold,
      remaining: allowed ? p.threshold : 0,
      resetAfterMs: 0,
      retryAfterMs,
    }));
    const first = answers[0];
    return { ...first, policies: answers, degraded: policy };
  }

  private outageBegins(error: unknown): void {
    if (this.outageStartedAt !== undefined) return;
    this.outageStartedAt = performance.now();
    this.degradedDecisions = 0;
    const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    const answer = {
      memory: 'limiting per instance in memory',
      allow: 'allowing every request',
      deny: 'denying every request with 503',
    }[this.policy];
    this.options.logger.warn(
      `The rate-limit store failed (${reason}); ${answer} until it recovers`,
    );
  }

  /** Asks the handler, if any; a handler that throws or answers nonsense gets `'memory'`. */
  private choosePolicy(error: unknown): StoreErrorPolicy {
    const handler = this.options.onStoreError;
    if (typeof handler !== 'function') return handler;
    const asError = error instanceof Error ? error : new Error(String(error));
    try {
      const chosen = handler(asError);
      if (chosen === undefined) return 'memory';
      if (chosen === 'memory' || chosen === 'allow' || chosen === 'deny') return chosen;
      this.warnOnce(`onStoreError returned ${String(chosen)}, not 'memory', 'allow' or 'deny'`);
    } catch (hookError) {
      this.warnOnce(
        `onStoreError threw: ${hookError instanceof Error ? hookError.message : String(hookError)}`,
      );
    }
    return 'memory';
  }

  /** Once per outage, like the outage warning itself. */
  private warnOnce(problem: string): void {
    if (this.outageStartedAt === undefined) {
      this.options.logger.warn(`${problem}; 'memory' answers instead`);
    }
  }

  private outageEnds(): void {
    const seconds = ((performance.now() - this.outageStartedAt!) / 1000).toFixed(1);
    this.options.logger.log(
      `The rate-limit store recovered after ${seconds}s; ${this.degradedDecisions} decisions were made without it`,
    );
    this.outageStartedAt = undefined;
  }
}

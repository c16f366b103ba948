import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import { degradedDecision } from './decision.js';
import { Deadlines } from './deadlines.js';
import { DENY_RETRY_MS, fixedAnswer } from './degraded.store.js';
import { giveBackLate } from './late-replies.js';
import { isMovingSlot, retryWhileSlotMoves } from './moving-slot.js';
import { type NodeHealth, NodeHealthMap, type OutageLogger } from './node-health.js';
import {
  type RateLimitDecision,
  type RateLimitStore,
  type StoreErrorHandler,
  type StoreErrorPolicy,
  type StoreOperation,
  invoke,
  type OperationExtras,
} from './store.interface.js';

export type { OutageLogger } from './node-health.js';

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

/**
 * Puts a bound on every decision and keeps answering when the primary store (Redis) fails:
 * each call gets `timeoutMs`, failures open a circuit breaker so a dead store is not waited on,
 * and meanwhile `onStoreError` decides: the memory store limits per instance, or everything is
 * allowed, or everything is denied. A probe goes through every few hundred ms; when it succeeds,
 * shared limiting resumes. Failures are judged per server (each master of a Redis Cluster, as
 * the primary's `nodeOf` tells): one that fails sends only its own keys to the fallback.
 */
export class ResilientStore implements RateLimitStore {
  private readonly deadlines: Deadlines;
  private readonly health: NodeHealthMap;
  /** Numbers decisions in the order they are sent, to tell which a server answered last. */
  private sent = 0;

  constructor(
    readonly primary: RateLimitStore,
    private readonly options: ResilientStoreOptions,
  ) {
    this.deadlines = new Deadlines(options.timeoutMs);
    const policy = typeof options.onStoreError === 'function' ? 'memory' : options.onStoreError;
    this.health = new NodeHealthMap(policy, options.logger);
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
    const now = performance.now();
    const node = this.healthOf(keys, now);
    if (!node.breaker.allow(now)) {
      return this.answer(node, keys, policies, costs, op, extras);
    }
    const sent = ++this.sent;
    let decision: RateLimitDecision;
    try {
      let pending = invoke(this.primary, op, keys, policies, costs, extras);
      // Only a cluster node can answer that a slot is moving.
      if (node.name !== '') {
        const deadline = now + this.options.timeoutMs;
        pending = pending.catch((error: unknown) =>
          retryWhileSlotMoves(error, deadline, () =>
            invoke(this.primary, op, keys, policies, costs, extras),
          ),
        );
      }
      decision = await this.deadlines.race(
        pending,
        this.lateReplyHandler(op, keys, policies, costs),
      );
    } catch (error) {
      const failedAt = performance.now();
      node.policy = this.choosePolicy(error, node);
      this.health.failed(node, sent, failedAt, error, isMovingSlot(error));
      return this.answer(node, keys, policies, costs, op, extras);
    }
    this.health.succeeded(node, sent, performance.now());
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

  /** The health of the server that decides on `keys`. */
  private healthOf(keys: readonly string[], now: number): NodeHealth {
    let name = '';
    if (this.primary.nodeOf !== undefined) {
      try {
        name = this.primary.nodeOf(keys);
      } catch {
        // A store that cannot tell is judged as one server.
      }
    }
    return this.health.of(name, now);
  }

  /** Whether the primary store is currently considered down, on any of its servers. */
  get degraded(): boolean {
    return this.health.degraded;
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
  degrade(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    op: StoreOperation = 'consume',
    extras?: OperationExtras,
  ): Promise<RateLimitDecision> {
    const node = this.healthOf(keys, performance.now());
    return this.answer(node, keys, policies, costs, op, extras);
  }

  private async answer(
    node: NodeHealth,
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    op: StoreOperation,
    extras?: OperationExtras,
  ): Promise<RateLimitDecision> {
    node.fallbackAnswers++;
    const policy = node.policy;
    if (policy === 'memory') {
      const { fallback } = this.options;
      const decided = await invoke(fallback, op, keys, policies, costs, extras);
      return degradedDecision(decided, policy);
    }
    // Under 'deny', no sooner than the breaker lets a call through to the store again.
    const retryMs = Math.max(DENY_RETRY_MS, node.breaker.waitMs(performance.now()));
    return fixedAnswer(policies, policy, retryMs);
  }

  /** Asks the handler, if any; a handler that throws or answers nonsense gets `'memory'`. */
  private choosePolicy(error: unknown, node: NodeHealth): StoreErrorPolicy {
    const handler = this.options.onStoreError;
    if (typeof handler !== 'function') return handler;
    const asError = error instanceof Error ? error : new Error(String(error));
    try {
      const chosen = handler(asError);
      if (chosen === undefined) return 'memory';
      if (chosen === 'memory' || chosen === 'allow' || chosen === 'deny') return chosen;
      this.warnOnce(
        node,
        `onStoreError returned ${String(chosen)}, not 'memory', 'allow' or 'deny'`,
      );
    } catch (hookError) {
      this.warnOnce(
        node,
        `onStoreError threw: ${hookError instanceof Error ? hookError.message : String(hookError)}`,
      );
    }
    return 'memory';
  }

  /** Once per outage, like the outage warning itself. */
  private warnOnce(node: NodeHealth, problem: string): void {
    if (node.outageSince === undefined) {
      this.options.logger.warn(`${problem}; 'memory' answers instead`);
    }
  }
}

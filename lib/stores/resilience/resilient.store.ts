import { Deadlines } from './deadlines.js';
import { LivenessCheck, notAnsweredInTime } from './liveness-check.js';
import {
  answerFor,
  answerWithout,
  chooseAnswer,
  DENY_RETRY_MS,
  followsItsRequest,
} from './store-error-answers.js';
import { ForwardingStore } from '../forwarding-store.js';
import { giveBackLate } from './late-replies.js';
import { type NodeHealth, type OutageLogger } from './node-health.js';
import { NodeHealthMap } from './node-health-map.js';
import { OutageProbe, type ServerAnswer } from './outage-probe.js';
import { type CallStore, type StoreCall } from '../../store-contract/store-call.js';
import {
  type RateLimitDecision,
  type StoreErrorHandler,
  type StoreErrorPolicy,
} from '../../store-contract/store.interface.js';
import { NO_TELEMETRY, type RateLimitTelemetry } from '../../telemetry/rate-limit-telemetry.js';
import { isStoreFailure, isThisDecisionOnly, lateOutcomeOf } from './store-failure.js';

export type { OutageLogger } from './node-health.js';
export type { ServerAnswer } from './outage-probe.js';

export interface ResilientStoreOptions {
  /** Longest wait for the primary store, in ms. */
  timeoutMs: number;
  /**
   * What answers while the primary store fails, or a handler told each error that picks it. A
   * policy's own `onStoreError` overrides it for that policy (see {@link answerFor}).
   */
  onStoreError: StoreErrorPolicy | StoreErrorHandler;
  /** Answers when `onStoreError` is `'memory'`. */
  fallback: CallStore;
  /** Close the primary store in `close()`. */
  ownsPrimary: boolean;
  logger: OutageLogger;
  /** Told of each call to the primary store and of each change of its health. */
  telemetry?: RateLimitTelemetry;
  /**
   * PINGs the primary store's one server within `withinMs` (a single Redis), for health checks;
   * absent where there is no one server to ask.
   */
  ping?: (withinMs: number) => Promise<number>;
}

/**
 * Puts a bound on every decision and keeps answering when the primary store (Redis) fails:
 * each call gets `timeoutMs`, failures open a circuit breaker so a dead store is not waited on,
 * and meanwhile `onStoreError` decides: the memory store limits per instance, or everything is
 * allowed, or everything is denied; a call whose policies have their own `onStoreError` gets the
 * strictest of theirs and the module's (for those without). A probe goes through every few
 * hundred ms; when it succeeds, shared limiting resumes. Failures are judged per server (each master of a Redis Cluster, as
 * the primary's `nodeOf` tells): one that fails sends only its own keys to the fallback.
 */
export class ResilientStore extends ForwardingStore {
  private readonly deadlines: Deadlines;
  private readonly health: NodeHealthMap;
  /** Numbers decisions in the order they are sent, to tell which a server answered last. */
  private sent = 0;
  private readonly telemetry: RateLimitTelemetry;
  private readonly outageProbe: OutageProbe;
  private readonly liveness: LivenessCheck;

  constructor(
    primary: CallStore,
    private readonly options: ResilientStoreOptions,
  ) {
    super(primary);
    this.deadlines = new Deadlines(options.timeoutMs);
    const policy = typeof options.onStoreError === 'function' ? 'memory' : options.onStoreError;
    const telemetry = (this.telemetry = options.telemetry ?? NO_TELEMETRY);
    this.health = new NodeHealthMap(
      policy,
      options.logger,
      telemetry.enabled ? (change) => telemetry.storeState(change) : undefined,
      (node) =>
        node.probeLimits !== undefined && primary.nodeOf(node.probeLimits.keys) === node.name,
    );
    this.liveness = new LivenessCheck({
      health: this.health,
      pingNode: primary.pingNode?.bind(primary),
      timeoutMs: options.timeoutMs,
      nextSent: () => ++this.sent,
    });
    this.outageProbe = new OutageProbe({
      primary,
      health: this.health,
      deadlines: this.deadlines,
      nextSent: () => ++this.sent,
      ping: options.ping,
    });
  }

  /** The store guarded: Redis, or a custom store. */
  get primary(): CallStore {
    return this.inner;
  }

  /**
   * Asks the primary store, within the timeout and behind the breaker. A refund, settlement,
   * release or renewal goes where the request was counted: to the fallback for a request it
   * answered, and nowhere for one that `'allow'` or `'deny'` answered, since nothing counted it.
   */
  override execute(call: StoreCall): Promise<RateLimitDecision> {
    const { op, of } = call;
    if (!followsItsRequest(op)) return this.guarded(call);
    if (of?.degraded === 'memory') return this.options.fallback.execute(call);
    if (of?.degraded !== undefined) return Promise.resolve(of);
    if (op === 'refund' || op === 'settle') return this.guarded(call);
    // The lease is in the primary store and nowhere else: a failure is reported, not answered by
    // the fallback, which knows nothing of it (the holder retries, or the lease expires).
    if (!this.telemetry.enabled) return this.deadlines.race(this.inner.execute(call));
    return this.timed(call, performance.now(), this.deadlines.race(this.inner.execute(call)));
  }

  /** Tells the telemetry how long `pending`, a call to the primary store, took. */
  private timed(call: StoreCall, startedAt: number, pending: Promise<RateLimitDecision>) {
    return pending.then(
      (decision) => {
        this.telemetry.storeCall(call.op, true, startedAt, performance.now());
        return decision;
      },
      (error: unknown) => {
        this.telemetry.storeCall(call.op, false, startedAt, performance.now());
        throw error;
      },
    );
  }

  /**
   * Asks the primary store within the timeout, and answers by `onStoreError` when it fails. An
   * error of the call's own (see {@link isStoreFailure}) rejects that call alone.
   */
  private async guarded(call: StoreCall): Promise<RateLimitDecision> {
    const primary = this.inner;
    // A store that lacks the method is a mistake to report, not an outage to fall back from.
    if (!primary.supports(call.op)) return primary.execute(call);
    const marked = call.limits.answerWithout;
    if (marked !== undefined) {
      return answerWithout(call, answerFor(call.limits.policies, marked), this.options.fallback);
    }
    const now = performance.now();
    const node = this.healthOf(call.limits.keys, now);
    if (call.failedMeanwhile === true || !node.breaker.allow(now)) return this.answer(node, call);
    const sent = ++this.sent;
    let decision: RateLimitDecision;
    const late = this.lateReplyHandler(call);
    try {
      decision = await this.deadlines.race(
        primary.execute(call),
        late,
        late && ((error) => giveBackIfApplied(error, late)),
      );
    } catch (error) {
      const failedAt = performance.now();
      this.telemetry.storeCall(call.op, false, now, failedAt);
      if (!isStoreFailure(error)) {
        // The call's own error, its caller's to see: the server stays as healthy as it was (if
        // this call was the breaker's probe, the next may probe), and no fallback answers it.
        node.breaker.release();
        throw error;
      }
      // The fallback answers it: whatever the store learns it applied meanwhile is given back.
      if (late !== undefined) giveBackIfApplied(error, late);
      node.policy = this.choosePolicy(error, node);
      node.probeLimits = call.limits;
      // This process held the call back past its deadline: the store was not late, this process was.
      const decisionOnly =
        isThisDecisionOnly(error) || (notAnsweredInTime(error) && this.deadlines.heldBack(now));
      if (
        !decisionOnly &&
        notAnsweredInTime(error) &&
        node.name !== '' &&
        node.answeredUpTo <= sent
      ) {
        this.liveness.failedUnlessAlive(node, sent, error);
      } else {
        this.health.failed(node, sent, failedAt, error, decisionOnly);
      }
      return this.answer(node, call);
    }
    const answeredAt = performance.now();
    this.telemetry.storeCall(call.op, true, now, answeredAt);
    this.health.succeeded(node, sent, answeredAt);
    return decision;
  }

  /**
   * What to do with a reply that comes after the timeout, or with what the store learns later of
   * a call that failed (see `withLateOutcome`): a consume or reserve it recorded is given back,
   * since the fallback answered (and counted) that request instead.
   */
  private lateReplyHandler(call: StoreCall): ((late: RateLimitDecision) => void) | undefined {
    if (call.op !== 'consume' && call.op !== 'reserve') return undefined;
    return (late) => giveBackLate(this.inner, call.limits, late);
  }

  /** The health of the server that decides on `keys`. */
  private healthOf(keys: readonly string[], now: number): NodeHealth {
    return this.health.of(this.inner.nodeOf(keys), now);
  }

  /** Whether the primary store is currently considered down, on any of its servers. */
  get degraded(): boolean {
    return this.health.degraded;
  }

  /**
   * What it knows of each server the primary store has sent decisions to (the one Redis, or each
   * master of a cluster): outage, breaker and the answer chosen for it. Read-only, for health
   * reports.
   */
  servers(): Iterable<Readonly<NodeHealth>> {
    return this.health.all();
  }

  /**
   * For health checks: asks the servers no decision is hearing from whether they answer (the one
   * server always, and each in an outage), as the breaker's probe would, and counts the answers
   * as decisions' (see {@link OutageProbe}). Resolves with what the one server's PING met.
   */
  probe(): Promise<ServerAnswer | undefined> {
    return this.outageProbe.ask();
  }

  /**
   * The primary store cannot be reached as the application starts: warns once, with `reason`,
   * saying what answers meanwhile (as `onStoreError` chooses for `error`), and counts the
   * decisions it answers until {@link connected}.
   */
  unreachableAtStart(error: Error, reason: string): void {
    const now = performance.now();
    const node = this.health.of('', now);
    node.policy = this.choosePolicy(error, node);
    this.health.unreachableAtStart(node, now, reason);
  }

  /** The primary store's client has connected: ends the outage that began at startup. */
  connected(): void {
    this.health.connected(performance.now());
  }

  override async close(): Promise<void> {
    this.deadlines.close();
    await this.options.fallback.close?.();
    if (this.options.ownsPrimary) await this.inner.close?.();
  }

  /**
   * Answers for the node's failure: as `onStoreError` said for it, or as the call's policies say
   * for themselves (the strictest answer wins, see {@link answerFor}).
   */
  private answer(node: NodeHealth, call: StoreCall): Promise<RateLimitDecision> {
    node.fallbackAnswers++;
    const answer = answerFor(call.limits.policies, node.policy);
    // Under 'deny', no sooner than the breaker lets a call through to the store again.
    const retryMs =
      answer === 'deny' ? Math.max(DENY_RETRY_MS, node.breaker.waitMs(performance.now())) : 0;
    return answerWithout(call, answer, this.options.fallback, retryMs);
  }

  /** What `onStoreError` answers for `error`; a handler's mistake is warned of once per outage. */
  private choosePolicy(error: unknown, node: NodeHealth): StoreErrorPolicy {
    return chooseAnswer(this.options.onStoreError, error, (problem) => {
      if (node.outageSince === undefined) {
        this.options.logger.warn(`${problem}; 'memory' answers instead`);
      }
    });
  }
}

/** Gives back, as `late` does, what the store learns it applied of a call that failed with `error`. */
function giveBackIfApplied(error: unknown, late: (decision: RateLimitDecision) => void): void {
  void lateOutcomeOf<RateLimitDecision>(error)?.then((applied) => {
    if (applied !== undefined) late(applied);
  });
}

import { type HealthChange } from '../../store-contract/health-change.js';
import { type StoreErrorPolicy } from '../../store-contract/store.interface.js';
import { isError } from '../errors.js';
import { NodeHealth, type OutageLogger, STABLE_MS } from './node-health.js';

// A node in outage that no decision has been sent to for this long (its slots moved to another
// master, say) is let go, so that `degraded` does not stay true for a node nobody uses.
const IDLE_MS = 10_000;
// Masters of one cluster, and a few more that a failover left behind.
const MAX_NODES = 1024;

const ANSWERS: Record<StoreErrorPolicy, string> = {
  memory: 'limiting per instance in memory',
  allow: 'allowing every request',
  deny: 'denying every request with 503',
};

/**
 * The health of each server the primary store sends decisions to, created when first used and
 * bounded. A failure counts against a server only when nothing it answered shows it alive: a
 * decision that fails while its server answers decisions sent after it (a slot half-way through a
 * migration, which the client retried until the deadline) falls back alone. Logs one warning
 * when a server's outage begins and one line when it ends, with how many decisions the fallback
 * answered meanwhile, however the failures and successes alternate in between. An outage ends on
 * evidence only: an answer of its server {@link STABLE_MS} after its latest failure, the client's
 * connection for the one that began at startup, or its keys decided on another node; a server not
 * heard from since its latest failure stays in it. Every end closes the server's breaker.
 */
export class NodeHealthMap {
  private readonly nodes = new Map<string, NodeHealth>();
  private readonly inOutage = new Set<NodeHealth>();
  private last: NodeHealth;
  /** The outage that began as the application started, until the client first connects. */
  private atStart: NodeHealth | undefined;

  constructor(
    private readonly initialPolicy: StoreErrorPolicy,
    private readonly logger: OutageLogger,
    /** Told of each change of a server's health (the telemetry). */
    private readonly onChange?: (change: HealthChange) => void,
    /**
     * Whether the keys whose decision last failed on a node are still decided there (the slot
     * map of a cluster): such a node is never let go for want of traffic, only on its answer.
     * Unknown (false) unless told.
     */
    private readonly decidesItsKeys: (health: NodeHealth) => boolean = () => false,
  ) {
    this.last = this.create('');
  }

  /** The health of `node`, created on first use; marks it as used at `now`. */
  of(node: string, now: number): NodeHealth {
    let health = this.last;
    if (health.name !== node) {
      health = this.nodes.get(node) ?? this.create(node);
      this.last = health;
    }
    health.lastUsedAt = now;
    return health;
  }

  /** Whether some server is in an outage. */
  get degraded(): boolean {
    return this.inOutage.size > 0;
  }

  /** Every server known, for health reports: not to be changed by the reader. */
  all(): IterableIterator<Readonly<NodeHealth>> {
    return this.nodes.values();
  }

  /** The servers in an outage now, for a probe to ask. */
  outages(): NodeHealth[] {
    return [...this.inOutage];
  }

  /** The record of `node` if there is one, without marking it as used (a probe is no decision). */
  known(node: string): NodeHealth | undefined {
    return this.nodes.get(node);
  }

  /** Decision number `sent` succeeded on `health`'s server. */
  succeeded(health: NodeHealth, sent: number, now: number): void {
    health.breaker.success();
    if (sent > health.answeredUpTo) health.answeredUpTo = sent;
    if (this.inOutage.size === 0) return;
    if (health.outageSince !== undefined) {
      health.healthySince ??= now;
      if (now - health.lastFailureAt >= STABLE_MS) this.recovered(health);
    }
    if (this.inOutage.size > 0) this.letGoOfOthers(health, now);
  }

  /** Something numbered `sent` in the decisions' order (a PING) was answered by `health`'s server. */
  answered(health: NodeHealth, sent: number): void {
    if (sent > health.answeredUpTo) health.answeredUpTo = sent;
  }

  /**
   * Decision number `sent` failed on `health`'s server. `decisionOnly` says the error concerns
   * that decision alone (a slot being migrated), not its server.
   */
  failed(
    health: NodeHealth,
    sent: number,
    now: number,
    error: unknown,
    decisionOnly: boolean,
  ): void {
    if (decisionOnly || health.answeredUpTo > sent) {
      // The server is alive. If this call was the breaker's probe, let another call probe.
      health.breaker.release();
      return;
    }
    health.breaker.failure(now);
    health.lastFailureAt = now;
    health.healthySince = undefined;
    health.lastError = error;
    if (health.outageSince !== undefined) return;
    health.outageSince = now;
    health.fallbackAnswers = 0;
    this.inOutage.add(health);
    this.onChange?.('degraded');
    const reason = isError(error) ? `${error.name}: ${error.message}` : String(error);
    this.logger.warn(
      `The rate-limit store failed${on(health)} (${reason}); ${ANSWERS[health.policy]} until it recovers`,
    );
  }

  /** Why `health`'s server counts as failing: its latest failure, as the outage warning names it. */
  static reason(health: Readonly<NodeHealth>): string | undefined {
    const error = health.lastError;
    if (error === undefined) return undefined;
    return isError(error) ? error.message : String(error);
  }

  /**
   * The store could not be reached as the application started: an outage of the server (or of a
   * cluster's unnamed node) from `now`, warned about once here instead of by the first decision
   * that fails; {@link connected} ends it.
   */
  unreachableAtStart(health: NodeHealth, now: number, reason: string): void {
    if (health.outageSince !== undefined) return;
    health.outageSince = now;
    health.lastFailureAt = now;
    health.lastError = reason;
    health.fallbackAnswers = 0;
    this.inOutage.add(health);
    this.onChange?.('degraded');
    this.atStart = health;
    this.logger.warn(
      `Redis is unreachable (${reason}); ${ANSWERS[health.policy]} until it connects, then limits are shared through Redis`,
    );
  }

  /**
   * The client has connected (it says it is ready): ends the outage that began at startup, if it
   * is still on.
   */
  connected(now: number): void {
    const health = this.atStart;
    if (health?.outageSince === undefined) {
      this.atStart = undefined;
      return;
    }
    health.healthySince ??= now;
    this.recovered(health);
  }

  /** Ends `health`'s outage with its one line: the startup outage's own, or the recovery. */
  private recovered(health: NodeHealth): void {
    const seconds = ((health.healthySince! - health.outageSince!) / 1000).toFixed(1);
    this.logger.log(
      health === this.atStart
        ? `Redis connected after ${seconds}s: rate limits are shared through Redis from now on; the fallback answered ${health.fallbackAnswers} decisions meanwhile`
        : `The rate-limit store recovered${on(health)} after ${seconds}s; the fallback answered ${health.fallbackAnswers} decisions meanwhile`,
    );
    this.endOutage(health);
  }

  /**
   * Ends outages that another server's success makes moot: that of the unnamed node (a cluster
   * client failing before it knew its slot map) once it is quiet, and that of a server no
   * decision has gone to for a while (see {@link letGoIfIdle}).
   */
  private letGoOfOthers(answered: NodeHealth, now: number): void {
    for (const health of this.inOutage) {
      if (health === answered) continue;
      if (health.name === '' && now - health.lastFailureAt >= STABLE_MS) {
        health.healthySince ??= now;
        this.recovered(health);
      } else {
        this.letGoIfIdle(health, now);
      }
    }
  }

  /**
   * Ends the outage of a node no decision has gone to for {@link IDLE_MS} and whose keys are
   * decided elsewhere now (its slots moved to another master), with the line that says so. A
   * node that still decides its keys stays in its outage until it answers.
   */
  letGoIfIdle(health: NodeHealth, now: number): void {
    if (health.outageSince === undefined || now - health.lastUsedAt < IDLE_MS) return;
    if (!this.decidesItsKeys(health)) this.letGo(health);
  }

  /** Ends the outage of a node no decision goes to any more, with the line that says so. */
  private letGo(health: NodeHealth): void {
    this.logger.log(
      `The rate-limit store has sent no decision to node ${health.name} for ${IDLE_MS / 1000}s; the fallback answered ${health.fallbackAnswers} decisions for it`,
    );
    this.endOutage(health);
  }

  /**
   * Every end of an outage goes through here, after its one line. The breaker closes with it
   * (it is closed already after an answer; a node let go, or the startup outage ended by the
   * connection, may have left it open), so that no report shows an outage over behind a breaker
   * that still keeps decisions from the server.
   */
  private endOutage(health: NodeHealth): void {
    if (health === this.atStart) this.atStart = undefined;
    health.breaker.success();
    health.outageSince = undefined;
    health.healthySince = undefined;
    this.inOutage.delete(health);
    this.onChange?.('recovered');
  }

  private create(node: string): NodeHealth {
    if (this.nodes.size >= MAX_NODES) this.forgetOne();
    const health = new NodeHealth(node, this.initialPolicy, this.onChange);
    this.nodes.set(node, health);
    return health;
  }

  /** Drops the oldest healthy node, or the oldest of all when every one is in an outage. */
  private forgetOne(): void {
    let victim: NodeHealth | undefined;
    for (const health of this.nodes.values()) {
      if (health === this.last) continue;
      victim ??= health;
      if (health.outageSince === undefined) {
        victim = health;
        break;
      }
    }
    if (victim === undefined) return;
    // Its outage ends with a line, like any other: no warning is left without one.
    if (victim.outageSince !== undefined) this.letGo(victim);
    this.nodes.delete(victim.name);
  }
}

const on = (health: NodeHealth) => (health.name === '' ? '' : ` on node ${health.name}`);

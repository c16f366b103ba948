import { type Deadlines } from './deadlines.js';
import { type NodeHealth } from './node-health.js';
import { NodeHealthMap } from './node-health-map.js';
import { type CallStore } from '../../store-contract/store-call.js';
import { isError } from '../errors.js';
import { isThisDecisionOnly } from './store-failure.js';

/** What asking the primary store's one server met, for a health report. */
export interface ServerAnswer {
  /** Whether it answered now, or, when it was not asked, since its latest failure. */
  readonly reachable: boolean;
  /** When it answered now: the round trip in ms. */
  readonly latencyMs?: number;
  /** When it did not: why (this probe's failure, or the latest one counted against it). */
  readonly error?: string;
}

/** What the probe needs from the store it works for. */
export interface ProbeTarget {
  readonly primary: CallStore;
  readonly health: NodeHealthMap;
  readonly deadlines: Deadlines;
  /** Numbers a call to the primary store, in the order decisions are numbered. */
  nextSent(): number;
  /**
   * Asks the primary store's one server (a single Redis) whether it answers, within `withinMs`;
   * absent where there is no such server to ask (a cluster, a store of your own).
   */
  readonly ping?: (withinMs: number) => Promise<number>;
}

/**
 * A health check's way of hearing from servers that no decision is hearing from: an outage ends
 * only once its server has answered, and with no traffic nothing else would ask. Each server is
 * asked as the breaker's own probe would be: only when its breaker lets a call through now
 * (claiming the probe while it is open, so that a decision and a check never probe at once),
 * within the module's timeout, and its answer counts exactly as a decision's does. Checks that
 * arrive together share one round. Decisions never wait on it: it runs only when a check asks.
 */
export class OutageProbe {
  private round: Promise<ServerAnswer | undefined> | undefined;

  constructor(private readonly target: ProbeTarget) {}

  /**
   * Asks the one server (whatever its state, for its reachability and latency) and each server
   * in an outage that a decision can be sent to again; resolves once every answer is counted,
   * with what the one server's PING met (undefined where there is none).
   */
  ask(): Promise<ServerAnswer | undefined> {
    this.round ??= this.askAll().finally(() => {
      this.round = undefined;
    });
    return this.round;
  }

  private async askAll(): Promise<ServerAnswer | undefined> {
    const { health, ping } = this.target;
    const one = ping === undefined ? undefined : health.known('');
    const asked = health
      .outages()
      .filter((node) => node !== one)
      .map((node) => this.peek(node));
    const answer = one === undefined ? undefined : await this.ping(one, ping!);
    await Promise.all(asked);
    return answer;
  }

  /** PINGs the one server, counting the answer against its record. */
  private async ping(
    node: NodeHealth,
    ping: (withinMs: number) => Promise<number>,
  ): Promise<ServerAnswer> {
    if (!node.breaker.allow(performance.now())) return unasked(node);
    const sent = this.target.nextSent();
    try {
      const latencyMs = await ping(this.target.deadlines.timeoutMs);
      this.target.health.succeeded(node, sent, performance.now());
      return { reachable: true, latencyMs: Math.round(latencyMs * 10) / 10 };
    } catch (error) {
      this.target.health.failed(node, sent, performance.now(), error, false);
      // Not counted: a decision sent after the PING has been answered, so the server is there.
      if (node.outageSince === undefined) return { reachable: true };
      return { reachable: false, error: isError(error) ? error.message : String(error) };
    }
  }

  /**
   * Reads (without recording) the limits whose decision last failed on `node`: the call goes
   * where that decision went, so that its answer is that node's. Nothing is asked of a node
   * those keys are no longer decided on, nor through a store that cannot read.
   */
  private async peek(node: NodeHealth): Promise<void> {
    const { primary, health, deadlines } = this.target;
    const limits = node.probeLimits;
    if (limits === undefined || !primary.supports('peek')) return;
    if (primary.nodeOf(limits.keys) !== node.name) {
      // Its keys are decided elsewhere now: nothing to ask it, and no reason to wait for it.
      health.letGoIfIdle(node, performance.now());
      return;
    }
    if (!node.breaker.allow(performance.now())) return;
    const sent = this.target.nextSent();
    try {
      await deadlines.race(primary.execute({ op: 'peek', limits }));
      health.succeeded(node, sent, performance.now());
    } catch (error) {
      health.failed(node, sent, performance.now(), error, isThisDecisionOnly(error));
    }
  }
}

/** A server the breaker keeps from being asked: what its record says. */
function unasked(node: Readonly<NodeHealth>): ServerAnswer {
  if (node.outageSince === undefined || node.healthySince !== undefined) return { reachable: true };
  return { reachable: false, error: NodeHealthMap.reason(node) };
}

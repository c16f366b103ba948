import { StoreTimeoutError } from './deadlines.js';
import { type NodeHealth } from './node-health.js';
import { type NodeHealthMap } from './node-health-map.js';
import { StoreLateError } from '../redis/answer-deadline.js';

/** What the check needs from the store it works for. */
export interface LivenessTarget {
  readonly health: NodeHealthMap;
  /** The primary store's way to PING one cluster node; absent on a store that has none. */
  readonly pingNode: ((node: string, withinMs: number) => Promise<unknown>) | undefined;
  readonly timeoutMs: number;
  /** Numbers a call to the primary store, in the order decisions are numbered. */
  nextSent(): number;
}

/** A PING to a server, numbered as the decisions are, and the failures it will judge. */
interface NodePing {
  readonly asked: number;
  readonly waiting: Array<{ readonly sent: number; readonly error: unknown }>;
  /** The node's `fallbackAnswers` when the first of them failed. */
  readonly answersBefore: number;
}

/**
 * No answer came in time (or Redis reached the decision only after its caller stopped waiting):
 * the server, or only this decision, was held up.
 */
export function notAnsweredInTime(error: unknown): boolean {
  return error instanceof StoreTimeoutError || error instanceof StoreLateError;
}

/**
 * Tells a cluster master that is held up from one decision that is: before a decision with no
 * answer in time counts against its master, the master is asked whether it answers at all.
 */
export class LivenessCheck {
  /** The PING out to each server whose decision got no answer in time. */
  private readonly pings = new Map<NodeHealth, NodePing>();

  constructor(private readonly target: LivenessTarget) {}

  /**
   * Decision number `sent` got no answer in time from a cluster node (or reached Redis only after
   * its deadline), and nothing the node answered since shows it alive: the node is asked (a PING,
   * within the timeout) before the failure counts against it. A master holding a slot half-way
   * through a migration answers, while the client retries the decision on that slot (ioredis and
   * GLIDE retry `TRYAGAIN` by themselves, for longer than any timeout): the decision falls back
   * alone, and the master's other keys stay on Redis. A frozen or unreachable master does not
   * answer, and the failure counts. One PING per node at a time answers for every decision sent
   * before it.
   */
  failedUnlessAlive(node: NodeHealth, sent: number, error: unknown): void {
    const { health, pingNode, timeoutMs } = this.target;
    if (pingNode === undefined) {
      health.failed(node, sent, performance.now(), error, false);
      return;
    }
    const pending = this.pings.get(node);
    if (pending !== undefined && pending.asked > sent) {
      pending.waiting.push({ sent, error });
      return;
    }
    const ping: NodePing = {
      asked: this.target.nextSent(),
      waiting: [{ sent, error }],
      answersBefore: node.fallbackAnswers,
    };
    this.pings.set(node, ping);
    const judge = () => {
      if (this.pings.get(node) === ping) this.pings.delete(node);
      const [inOutage, answered] = [node.outageSince !== undefined, node.fallbackAnswers];
      for (const failed of ping.waiting) {
        health.failed(node, failed.sent, performance.now(), failed.error, false);
      }
      // What the fallback answered for the node while it was asked belongs to the outage that
      // these failures begin, which counts its answers from zero.
      if (!inOutage && node.outageSince !== undefined) {
        node.fallbackAnswers += answered - ping.answersBefore;
      }
    };
    Promise.resolve()
      .then(() => pingNode(node.name, timeoutMs))
      .then(() => health.answered(node, ping.asked))
      .then(judge, judge);
  }
}

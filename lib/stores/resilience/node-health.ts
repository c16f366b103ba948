import { CircuitBreaker } from './circuit-breaker.js';
import { type HealthChange } from '../../store-contract/health-change.js';
import { type Limits } from '../../store-contract/store-call.js';
import { type StoreErrorPolicy } from '../../store-contract/store.interface.js';

/** Where outage warnings go: the module passes its Nest `Logger`. */
export interface OutageLogger {
  warn(message: string): void;
  log(message: string): void;
}

/**
 * An outage is over once its node has gone this long without a failure, seen on an answer of that
 * node (a decision's, or a health check's probe): a node not heard from since its latest failure
 * is down, however long ago that was.
 */
export const STABLE_MS = 1000;
/**
 * What the resilience layer knows of one server (a Cluster master, or the one Redis): its circuit
 * breaker, the answer `onStoreError` chose for it, and its outage if one is going on.
 */
export class NodeHealth {
  readonly breaker: CircuitBreaker;
  /** The latest decision, in send order, that this node answered. */
  answeredUpTo = 0;
  /** When the current outage began; undefined while the node is healthy. */
  outageSince: number | undefined;
  lastFailureAt = -Infinity;
  /** The first success after the latest failure. */
  healthySince: number | undefined;
  /** Decisions the fallback answered for this node since its outage began. */
  fallbackAnswers = 0;
  lastUsedAt = 0;
  /** What the latest failure counted against this node was. */
  lastError: unknown;
  /** The limits of the latest decision that failed here: what a probe of this node asks about. */
  probeLimits: Limits | undefined;

  constructor(
    /** `host:port` of a Cluster master; '' for a single server, or a node not known yet. */
    readonly name: string,
    /**
     * The module's answer while degraded: fixed, or what the handler chose for the latest error.
     * A call's policies with an `onStoreError` of their own may answer otherwise.
     */
    public policy: StoreErrorPolicy,
    onChange?: (change: HealthChange) => void,
  ) {
    this.breaker = new CircuitBreaker(undefined, undefined, undefined, onChange);
  }
}

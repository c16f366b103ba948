import { type BreakerState } from '../stores/circuit-breaker.js';
import { type NodeHealth, STABLE_MS } from '../stores/node-health.js';
import { type StoreErrorHandler, type StoreErrorPolicy } from '../stores/store.interface.js';

/**
 * What {@link RateLimitHealthIndicator} reports under its key, in the shape of a Terminus
 * `HealthIndicatorResult` entry. Fields that do not apply to the store in use are absent.
 */
export type RateLimitHealthDetails = {
  /** `down` only where decisions are denied meanwhile (`onStoreError: 'deny'`). */
  status: 'up' | 'down';
  /** `'memory'`, `'redis'`, or the class name of a custom store. */
  store: string;
  /** Redis only: `'ioredis'`, `'iovalkey'`, `'node-redis'` or `'valkey-glide'`. */
  library?: string;
  /** Redis only: decisions go out as FCALL of the loaded library, or as EVALSHA. */
  decisionsRunAs?: 'functions' | 'scripts';
  /** Whether the store answers: a PING for Redis, the latest decisions for a custom store. */
  reachable: boolean;
  /** Redis only, when it answered: the PING's round trip in ms. */
  latencyMs?: number;
  /** Why the store is unreachable. */
  error?: string;
  /** Whether decisions are answered without the store now, as `fallback` says. */
  degraded: boolean;
  /** While degraded: since when (ISO 8601). */
  degradedSince?: string;
  /** What answers while degraded: the memory store, or every request allowed, or denied. */
  fallback?: StoreErrorPolicy;
  /** While degraded: decisions the fallback answered since the outage began. */
  fallbackAnswers?: number;
  /** The circuit breaker; on a cluster, the worst of its masters'. */
  breaker?: BreakerState;
  /** Servers failing now: 1 for a single server; on a cluster, how many masters. */
  failingNodes?: number;
};

/** Whether the primary store answered the health check's own probe, when it can be asked. */
export interface Reachability {
  readonly reachable: boolean;
  readonly latencyMs?: number;
  readonly error?: string;
}

const BREAKER_ORDER: readonly BreakerState[] = ['closed', 'half_open', 'open'];
const STRICTNESS: readonly StoreErrorPolicy[] = ['allow', 'memory', 'deny'];

/**
 * The resilience part of the report, from what the store knows of each server and, for Redis,
 * the probe just made. A server is failing while it is in an outage and failed within
 * {@link STABLE_MS} (the rule by which the store itself ends an outage), or while the probe gets
 * no answer: so the report follows Redis going away and coming back even when no decision is
 * made meanwhile to tell the store.
 */
export function resilienceDetails(
  servers: Iterable<Readonly<NodeHealth>>,
  probe: Reachability | undefined,
  onStoreError: StoreErrorPolicy | StoreErrorHandler,
  now: number,
  unreachableSince: number | undefined,
): Pick<
  RateLimitHealthDetails,
  'degraded' | 'degradedSince' | 'fallback' | 'fallbackAnswers' | 'breaker' | 'failingNodes'
> {
  let breaker: BreakerState = 'closed';
  let unnamed: Readonly<NodeHealth> | undefined;
  const failing: Array<Readonly<NodeHealth>> = [];
  for (const server of servers) {
    const state = server.breaker.state;
    if (BREAKER_ORDER.indexOf(state) > BREAKER_ORDER.indexOf(breaker)) breaker = state;
    if (server.name === '') unnamed = server;
    if (server.outageSince === undefined) continue;
    // Without a probe of its own, the store's record is all there is to go by.
    if (probe === undefined || now - server.lastFailureAt < STABLE_MS) failing.push(server);
  }
  const unreachable = probe !== undefined && !probe.reachable;
  if (failing.length === 0 && !unreachable) return { degraded: false, breaker, failingNodes: 0 };

  let since = unreachable ? unreachableSince : undefined;
  let fallbackAnswers = 0;
  for (const server of failing) {
    since = Math.min(since ?? Infinity, server.outageSince!);
    fallbackAnswers += server.fallbackAnswers;
  }
  // A handler's choice is known once a decision has failed; until then the store's own default.
  const policies = failing.map((server) => server.policy);
  if (policies.length === 0) {
    policies.push(
      typeof onStoreError === 'function' ? (unnamed?.policy ?? 'memory') : onStoreError,
    );
  }
  const fallback = policies.reduce((a, b) =>
    STRICTNESS.indexOf(b) > STRICTNESS.indexOf(a) ? b : a,
  );
  return {
    degraded: true,
    degradedSince: since === undefined ? undefined : wallClock(since),
    fallback,
    fallbackAnswers,
    breaker,
    failingNodes: Math.max(failing.length, 1),
  };
}

/** A `performance.now()` reading as an ISO 8601 date: the same reading, the same date. */
function wallClock(at: number): string {
  return new Date(performance.timeOrigin + at).toISOString();
}

import { type BreakerState } from '../store-contract/health-change.js';
import { type NodeHealth } from '../stores/resilience/node-health.js';
import { type StoreErrorPolicy } from '../store-contract/store.interface.js';

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
  /**
   * Whether the store answers: for one Redis, its answer to the check's PING (while the breaker
   * keeps calls away, whether it answered since its latest failure); on a cluster, the first
   * master's; for a custom store, whether it is out of an outage.
   */
  reachable: boolean;
  /** Redis only, when it answered: the PING's round trip in ms. */
  latencyMs?: number;
  /** Why the store is unreachable: the PING's failure, or the latest one the store counted. */
  error?: string;
  /**
   * Whether a server is in an outage: from the failure that began it (its warning) until the
   * server answered again (its recovery line). Meanwhile `fallback` answers what cannot reach it.
   */
  degraded: boolean;
  /** While degraded: when the outage began (ISO 8601), the same at every read of it. */
  degradedSince?: string;
  /** What answers while degraded: the memory store, or every request allowed, or denied. */
  fallback?: StoreErrorPolicy;
  /** While degraded: decisions the fallback answered since the outage began. */
  fallbackAnswers?: number;
  /** The circuit breaker; on a cluster, the worst of its masters'. */
  breaker?: BreakerState;
  /** Servers in an outage now: 0 or 1 for a single server; on a cluster, how many masters. */
  failingNodes?: number;
  /**
   * A cluster only: each master decisions have gone to since the app started, by `host:port`,
   * and its own state (a master a failover replaced stays, its outage let go after 10 s idle).
   */
  nodes?: Record<
    string,
    {
      degraded: boolean;
      /** While degraded: when its outage began (ISO 8601). */
      degradedSince?: string;
      /** While degraded: decisions the fallback answered for it. */
      fallbackAnswers?: number;
      breaker: BreakerState;
      /** While degraded: the latest failure counted against it. */
      error?: string;
    }
  >;
};

const BREAKER_ORDER: readonly BreakerState[] = ['closed', 'half_open', 'open'];
const STRICTNESS: readonly StoreErrorPolicy[] = ['allow', 'memory', 'deny'];

/**
 * The resilience part of the report, from what the store knows of each server: a server is
 * failing for the whole of its outage, from the failure that began it (its warning) until it has
 * answered again (its recovery line). The check's own probe, made just before, is one more call
 * the store counted, so the record is as fresh as the check can make it. The fields agree at
 * every read: `degraded` ⇔ `failingNodes > 0` ⇔ `degradedSince`, `fallback` and `fallbackAnswers`
 * are present; a breaker that is not closed belongs to a server in an outage, so `breaker` other
 * than `'closed'` ⇒ `degraded`.
 */
export function resilienceDetails(
  servers: Iterable<Readonly<NodeHealth>>,
): Pick<
  RateLimitHealthDetails,
  'degraded' | 'degradedSince' | 'fallback' | 'fallbackAnswers' | 'breaker' | 'failingNodes'
> {
  let breaker: BreakerState = 'closed';
  const failing: Array<Readonly<NodeHealth>> = [];
  for (const server of servers) {
    const state = server.breaker.state;
    if (BREAKER_ORDER.indexOf(state) > BREAKER_ORDER.indexOf(breaker)) breaker = state;
    if (server.outageSince !== undefined) failing.push(server);
  }
  if (failing.length === 0) return { degraded: false, breaker, failingNodes: 0 };

  let since = Infinity;
  let fallbackAnswers = 0;
  for (const server of failing) {
    since = Math.min(since, server.outageSince!);
    fallbackAnswers += server.fallbackAnswers;
  }
  // A handler's choice is that of each server's latest failure.
  const fallback = failing
    .map((server) => server.policy)
    .reduce((a, b) => (STRICTNESS.indexOf(b) > STRICTNESS.indexOf(a) ? b : a));
  return {
    degraded: true,
    degradedSince: wallClock(since),
    fallback,
    fallbackAnswers,
    breaker,
    failingNodes: failing.length,
  };
}

/** Each named server's own state, for a cluster's report (see `RateLimitHealthDetails.nodes`). */
export function nodeDetails(
  servers: Iterable<Readonly<NodeHealth>>,
): NonNullable<RateLimitHealthDetails['nodes']> {
  const nodes: NonNullable<RateLimitHealthDetails['nodes']> = {};
  const named = [...servers].filter((server) => server.name !== '');
  for (const server of named.sort((a, b) => a.name.localeCompare(b.name))) {
    const breaker = server.breaker.state;
    if (server.outageSince === undefined) {
      nodes[server.name] = { degraded: false, breaker };
      continue;
    }
    const error = server.lastError;
    nodes[server.name] = {
      degraded: true,
      degradedSince: wallClock(server.outageSince),
      fallbackAnswers: server.fallbackAnswers,
      breaker,
      ...(error === undefined
        ? {}
        : { error: error instanceof Error ? error.message : String(error) }),
    };
  }
  return nodes;
}

/** A `performance.now()` reading as an ISO 8601 date: the same reading, the same date. */
function wallClock(at: number): string {
  return new Date(performance.timeOrigin + at).toISOString();
}

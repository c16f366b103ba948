/**
 * The test tiers, chosen by `TEST_TIER` (the npm scripts set it; unset means `all`). Which stores
 * and clients each suite runs on follows from the same variable (test/support/matrix.ts).
 *
 * - `fast` (`npm run test:fast`): every spec that needs no Redis, on the memory store alone. A
 *   contributor's first run, and CI's run under a busy machine.
 * - `default` (`npm test`): every spec but the browser's, on the memory store and ioredis against
 *   redis-server.
 * - `all` (`npm run test:all`): every spec through every client library, functions and scripts,
 *   on redis-server and valkey-server, and the specs that drive a browser.
 */

/** Specs that need a Redis server whatever the tier: servers, clusters, faults, clients. */
const NEEDS_REDIS = [
  '/test/abuse/redis.abuse.spec.ts',
  '/test/cluster/activity-exchange.cluster.spec.ts',
  '/test/cluster/cluster.spec.ts',
  '/test/cluster/failover.spec.ts',
  '/test/cluster/node-failures.spec.ts',
  '/test/cluster/override-source.cluster.spec.ts',
  '/test/cluster/resharding.spec.ts',
  '/test/cluster/sentinel.spec.ts',
  '/test/cluster/slot-groups.spec.ts',
  '/test/contract/http/block-cache.http.spec.ts',
  '/test/contract/store/activity-exchange.spec.ts',
  '/test/contract/http/module.contract.spec.ts',
  '/test/contract/http/scope.contract.spec.ts',
  '/test/contract/store/batch-function.spec.ts',
  '/test/contract/store/batches.contract.spec.ts',
  '/test/contract/store/calendar-timelines.spec.ts',
  '/test/contract/store/decision-ids.spec.ts',
  '/test/contract/store/library-memory.spec.ts',
  '/test/contract/store/former-layout.spec.ts',
  '/test/contract/store/functions.spec.ts',
  '/test/contract/store/glide.spec.ts',
  '/test/contract/store/heavy-costs.spec.ts',
  '/test/contract/store/late-give-backs.spec.ts',
  '/test/contract/store/override-source.spec.ts',
  '/test/contract/store/seed-defects.redis.spec.ts',
  '/test/contract/store/server-identity.spec.ts',
  '/test/contract/store/service-operations.spec.ts',
  '/test/contract/store/settlements.contract.spec.ts',
  '/test/contract/store/store.contract.spec.ts',
  '/test/e2e/sample.e2e.spec.ts',
  '/test/fault/boot-without-redis.spec.ts',
  '/test/fault/console-outage.spec.ts',
  '/test/fault/event-loop-stall.spec.ts',
  '/test/fault/eviction-warning.spec.ts',
  '/test/fault/faults.spec.ts',
  '/test/fault/flapping.spec.ts',
  '/test/fault/late-decisions.spec.ts',
  '/test/fault/late-replies.spec.ts',
  '/test/fault/lease-crash.spec.ts',
  '/test/fault/lost-replies-slow-reconnect.spec.ts',
  '/test/fault/lost-replies.spec.ts',
  '/test/fault/override-convergence.spec.ts',
  '/test/fault/override-loss.spec.ts',
  '/test/fault/policies.spec.ts',
  '/test/fault/policy-fail-answers.service.spec.ts',
  '/test/fault/policy-fail-answers.spec.ts',
  '/test/fault/redis-outage.spec.ts',
  '/test/fault/time-refused.spec.ts',
  '/test/flow/booked-spacing.spec.ts',
  '/test/health/health-indicator.spec.ts',
  '/test/health/quiet-outage.spec.ts',
  '/test/property/block-cache.spec.ts',
  '/test/property/leases.spec.ts',
  '/test/property/settlements.spec.ts',
  '/test/property/timelines.spec.ts',
  '/test/property/weighted-refunds.spec.ts',
  '/test/telemetry/telemetry.spec.ts',
  '/test/transports/graphql.e2e.spec.ts',
  '/test/transports/rpc.e2e.spec.ts',
  '/test/transports/ws.e2e.spec.ts',
  '/test/unit/lost-replies.spec.ts',
];

/**
 * Specs that spend their time waiting in real time (calls spaced over seconds) or filling memory
 * (a million trackers in a 256 MB heap, in a child process): the default tier runs them.
 */
const SLOW = [
  '/test/abuse/memory-spray.abuse.spec.ts',
  '/test/flow/',
  '/test/transports/flow-control.transports.spec.ts',
];

/**
 * Specs that drive a real browser (Chromium, which `.ci/run` installs when missing): the full tier
 * alone runs them, so that `npm test` needs no browser.
 */
const BROWSER = ['/test/e2e/console.browser.spec.ts'];

const TIERS = {
  fast: {
    project: 'memory',
    leaveOut: [...NEEDS_REDIS, ...SLOW, ...BROWSER],
    valkey: false,
    maxWorkers: 2,
  },
  default: { project: 'redis', leaveOut: BROWSER, valkey: false, maxWorkers: 2 },
  all: { project: 'redis', leaveOut: [], valkey: true, maxWorkers: undefined },
};

/** The tier `value` names (`all` when unset); throws naming the choices otherwise. */
export function tierOf(value) {
  const tier = TIERS[value || 'all'];
  if (tier === undefined) throw new Error(`TEST_TIER must be fast, default or all, got ${value}`);
  return tier;
}

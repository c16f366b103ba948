/**
 * One master of a 3-master cluster fails, or one slot is half-way through a migration: only the
 * decisions that go there may fall back; every other key stays on Redis, exact.
 *
 * The nodes run with `cluster-require-full-coverage no`. With the default (`yes`), a master
 * frozen for longer than `cluster-node-timeout` (1 s here) is flagged FAIL and the other masters
 * refuse every command with CLUSTERDOWN: the cluster itself would take their keys off Redis, and
 * the test could not tell that from the module doing it.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import {
  RateLimitHealthIndicator,
  type RateLimitPolicy,
  RateLimitService,
  type RedisConnection,
} from '../../lib/index.js';
import { type RateLimitRootOptions } from '../../lib/options/rate-limit.options.js';
import { type RateLimitHealthDetails } from '../../lib/health/store-health.js';
import { keySlot } from '../../lib/stores/redis/key-slot.js';
import { uniquePrefix } from '../contract/http/fixtures/app.js';
import { CapturingLogger, createLimiterApp, sleep } from '../fault/traffic.js';
import { CLIENT_KINDS } from '../support/clients.js';
import { type ClusterMaster, type TestCluster } from '../support/redis-cluster.js';
import { useCluster } from '../support/stores.js';
import { waitFor } from '../support/wait-for.js';
import { stateKeys } from '../support/decision-ids.js';

// Short beside a cluster client's own retries (ioredis: 16 TRYAGAIN 100 ms apart), and long enough
// that no decision on a healthy master outlives it on a busy machine, whose starved Redis and
// client take well over 100 ms now and then: the tests count fallbacks exactly.
const TIMEOUT_MS = 500;
// Between two decisions on one key.
const EVERY_MS = 5;
// How long a slot is held half-migrated: longer than a cluster client's own TRYAGAIN retries
// (ioredis: 16 redirections 100 ms apart).
const HALF_MIGRATED_MS = 3000;
// Closed-loop callers, each alternating between two keys, and their pause between decisions.
const CALLERS = 16;
const CALLER_PAUSE_MS = 2;
// Two policies, as a route with a short and a long limit has: two keys under one hash tag, each
// kept for its period (a roomy bucket would expire at once, being full again).
const TWO_POLICIES: RateLimitPolicy[] = [
  { period: '1h', threshold: 1_000_000, name: 'hour' },
  { period: '1d', threshold: 1_000_000, name: 'day', algorithm: 'fixed-window' },
];

interface KeyedSample {
  key: string;
  /** `performance.now()` when it was sent. */
  at: number;
  /** How long its answer took, in ms. */
  tookMs: number;
  degraded: string | undefined;
  allowed: boolean;
  error: unknown;
}

const serves = (master: ClusterMaster, slot: number) =>
  master.slots.some(([from, to]) => slot >= from && slot <= to);

/** `count` fresh service keys whose hash slot `master` serves, and those slots. */
async function keysOn(cluster: TestCluster, master: ClusterMaster, count: number) {
  const admin = cluster.admin(master);
  const keys: string[] = [];
  while (keys.length < count) {
    const key = `node-${randomUUID()}`;
    // The service puts the whole key in the hash tag, so its slot is that of the key itself.
    if (serves(master, (await admin.call('CLUSTER', 'KEYSLOT', key)) as number)) keys.push(key);
  }
  return keys;
}

/**
 * The decisions among `of` that the fallback answered before their timeout had passed: a store
 * that judged their server failed, or their own call. Past the timeout, the fallback answers as
 * promised, whatever kept the reply: a machine too busy to read it in time (two keys on two
 * masters at the same moment, once in a busy run) is no fault of the server, nor of the store.
 */
function fellBackEarly(of: readonly KeyedSample[]): KeyedSample[] {
  return of.filter((s) => s.degraded !== undefined && s.tookMs < TIMEOUT_MS);
}

/**
 * At most a small share of `of` answered by the fallback after its timeout: a client held up by
 * the fault for every key would leave them all to it.
 */
function expectFewTimedOut(of: readonly KeyedSample[]): void {
  const timedOut = of.filter((s) => s.degraded !== undefined && s.tookMs >= TIMEOUT_MS);
  expect(timedOut.length).toBeLessThanOrEqual(Math.max(2, of.length * 0.02));
}

/**
 * Open-loop traffic, as requests reach an app whatever the store does: one decision per key
 * every {@link EVERY_MS} ms until `stop` resolves (20 s at most), so that decisions on a server
 * that does not answer pile up as they would in production. Resolves once all are answered.
 */
async function trafficOn(
  app: INestApplication,
  keys: readonly string[],
  stop: Promise<unknown>,
): Promise<KeyedSample[]> {
  const limiter = app.get(RateLimitService);
  const samples: KeyedSample[] = [];
  const pending: Array<Promise<void>> = [];
  const send = (key: string) => {
    const at = performance.now();
    const sample = (fields: Omit<KeyedSample, 'key' | 'at' | 'tookMs'>) =>
      void samples.push({ key, at, tookMs: performance.now() - at, ...fields });
    return limiter.consume(key, TWO_POLICIES).then(
      (d) => sample({ degraded: d.degraded, allowed: d.allowed, error: null }),
      (error: unknown) => sample({ degraded: undefined, allowed: false, error }),
    );
  };
  const timer = setInterval(() => {
    for (const key of keys) pending.push(send(key));
  }, EVERY_MS);
  await Promise.race([stop.catch(() => {}), sleep(20_000)]);
  clearInterval(timer);
  await Promise.all(pending);
  return samples;
}

/**
 * {@link CALLERS} callers, each deciding on `first`, then on `second`, then again, with a short
 * pause, until `stop` resolves: a caller waits for each answer, as a request does, so that while
 * decisions on `first` hang, little else is in flight.
 */
async function callersAlternating(
  app: INestApplication,
  first: string,
  second: string,
  stop: Promise<unknown>,
): Promise<KeyedSample[]> {
  const limiter = app.get(RateLimitService);
  const samples: KeyedSample[] = [];
  let done = false;
  void stop.finally(() => (done = true)).catch(() => {});
  const caller = async () => {
    while (!done) {
      for (const key of [first, second]) {
        const at = performance.now();
        try {
          const d = await limiter.consume(key, TWO_POLICIES);
          const tookMs = performance.now() - at;
          samples.push({ key, at, tookMs, degraded: d.degraded, allowed: d.allowed, error: null });
        } catch (error) {
          const tookMs = performance.now() - at;
          samples.push({ key, at, tookMs, degraded: undefined, allowed: false, error });
        }
      }
      await sleep(CALLER_PAUSE_MS);
    }
  };
  await Promise.all(Array.from({ length: CALLERS }, caller));
  return samples;
}

/** Sequential decisions on a fresh key of `master`, limit 5 of 8: how many passed, and how. */
async function exactOn(cluster: TestCluster, app: INestApplication, master: ClusterMaster) {
  const [key] = await keysOn(cluster, master, 1);
  const limiter = app.get(RateLimitService);
  const decisions = [];
  for (let i = 0; i < 8; i++) {
    decisions.push(await limiter.consume(key, { period: '1h', threshold: 5 }));
  }
  return {
    allowed: decisions.filter((d) => d.allowed).length,
    degraded: decisions.filter((d) => d.degraded !== undefined).length,
  };
}

const rows: string[] = [];

describe('per-node failures on a 3-master cluster', () => {
  const cluster = useCluster({
    replicas: 0,
    own: true,
    nodeArgs: ['--cluster-require-full-coverage', 'no'],
  });
  let app: INestApplication | undefined;

  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  afterAll(() => {
    process.stdout.write(
      `\nPer-node failures (timeout ${TIMEOUT_MS} ms):\n` +
        '| client | fault | decisions on | answered by the fallback | warnings | recoveries |\n' +
        `|---|---|---|---|---|---|\n${rows.join('\n')}\n`,
    );
  });

  async function startApp(kind: (typeof CLIENT_KINDS)[number], extra: RateLimitRootOptions = {}) {
    const logger = new CapturingLogger();
    const client = await cluster().connect(kind);
    app = await createLimiterApp(
      {
        redis: client as RedisConnection,
        timeout: TIMEOUT_MS,
        keyPrefix: uniquePrefix(),
        ...extra,
      },
      logger,
    );
    return logger;
  }

  it('computes the hash slot of a key as Redis does', async () => {
    const admin = cluster().admin((await cluster().masters())[0]);
    const keys = ['123456789', '{}', 'x{}y{z}', '{a}{b}', 'a{', '}{a}', 'p:{café|ü}:0:sw'];
    for (let i = 0; i < 200; i++) {
      const tag = String.fromCodePoint(
        ...Array.from({ length: i % 7 }, (_, j) => 32 + ((i * 31 + j * 977) % 3000)),
      );
      keys.push(`p:{${tag}}:${i}`, `${randomUUID()}${i % 2 ? '{' : ''}`);
    }
    for (const key of keys) {
      expect([key, keySlot(key)]).toEqual([key, await admin.call('CLUSTER', 'KEYSLOT', key)]);
    }
  });

  describe.each(CLIENT_KINDS)('through %s', (kind) => {
    it('a frozen master (SIGSTOP for 3 s) sends only its own keys to the fallback', async () => {
      const logger = await startApp(kind);
      const masters = await cluster().masters();
      expect(masters).toHaveLength(3);
      const [victim, ...healthy] = masters;
      const victimKeys = await keysOn(cluster(), victim, 2);
      const healthyKeys = (await Promise.all(healthy.map((m) => keysOn(cluster(), m, 2)))).flat();
      const limiter = app!.get(RateLimitService);
      // Connections to every master are open before the fault.
      for (const key of [...victimKeys, ...healthyKeys]) {
        expect((await limiter.consume(key, TWO_POLICIES)).degraded).toBeUndefined();
      }

      const node = cluster().nodes.find((n) => n.port === victim.port)!;
      let exact: Array<Promise<{ allowed: number; degraded: number }>> = [];
      let frozenHealth: RateLimitHealthDetails | undefined;
      let [frozenAt, thawedAt] = [Infinity, Infinity];
      const fault = (async () => {
        await sleep(300);
        node.freeze(true);
        frozenAt = performance.now();
        try {
          await sleep(1000);
          // While the victim is frozen, on each healthy master.
          exact = healthy.map((m) => exactOn(cluster(), app!, m));
          // Read while frozen, once the store has seen the outage (a busy machine's client may
          // take longer than the second to give up on the frozen master).
          const indicator = app!.get(RateLimitHealthIndicator);
          for (let read = 0; read < 30 && frozenHealth?.degraded !== true; read++) {
            if (read > 0) await sleep(50);
            frozenHealth = (await indicator.isHealthy('store')).store;
          }
          await Promise.all(exact);
          await sleep(2000);
        } finally {
          node.freeze(false);
          thawedAt = performance.now();
        }
        // Long enough for the victim's outage to be seen over (1 s without a failure).
        await sleep(2000);
      })();
      const samples = await trafficOn(app!, [...victimKeys, ...healthyKeys], fault);
      await fault;

      const onHealthy = samples.filter((s) => healthyKeys.includes(s.key));
      const onVictim = samples.filter((s) => victimKeys.includes(s.key));
      const fellBack = (of: KeyedSample[]) => of.filter((s) => s.degraded !== undefined).length;
      const recoveries = logger.messages.filter((m) => m.includes('recovered'));
      const whileFrozen = (of: KeyedSample[]) =>
        of.filter((s) => s.at >= frozenAt && s.at < thawedAt);
      const share = (of: KeyedSample[]) =>
        `${fellBack(of)} of ${of.length} (${((100 * fellBack(of)) / of.length).toFixed(1)}%)`;
      rows.push(
        `| ${kind} | SIGSTOP one master 3 s | other masters', sent while it was frozen | ${share(whileFrozen(onHealthy))} | ${logger.warnings.length} | ${recoveries.length} |`,
        `| ${kind} | SIGSTOP one master 3 s | frozen master's, sent while it was frozen | ${share(whileFrozen(onVictim))} | | |`,
      );

      expect(samples.filter((s) => s.error !== null)).toEqual([]);
      // The fault was real: the frozen master's keys fell back...
      expect(fellBack(onVictim)).toBeGreaterThan(0);
      // ...and no other key did, and limits on the other masters stayed exact.
      expect(onHealthy.length).toBeGreaterThan(100);
      expect(fellBackEarly(onHealthy)).toEqual([]);
      expectFewTimedOut(onHealthy);
      expect(await Promise.all(exact)).toEqual(healthy.map(() => ({ allowed: 5, degraded: 0 })));
      // The health report names the frozen master, and only it, as degraded.
      const byPort = Object.entries(frozenHealth?.nodes ?? {}).map(([node, state]) => [
        Number(node.slice(node.lastIndexOf(':') + 1)),
        state.degraded,
      ]);
      expect(byPort.sort()).toEqual(masters.map((m) => [m.port, m === victim]).sort());
      expect(frozenHealth).toMatchObject({ degraded: true, failingNodes: 1 });
      // One warning, naming the frozen master, and one line when it is back.
      expect(logger.warnings).toHaveLength(1);
      expect(logger.warnings[0]).toContain(`:${victim.port} `);
      expect(recoveries).toHaveLength(1);
      expect(recoveries[0]).toContain(`:${victim.port} `);

      // Let the cluster clear the FAIL flag it put on the victim before the next test.
      await waitFor('all three masters healthy', 20_000, async () =>
        (await cluster().masters()).length === 3 ? true : 'a master is still flagged',
      );
      await cluster().waitUntilOk();
    }, 60_000);

    it.each(['memory', 'deny'] as const)(
      "a slot half-migrated for longer than the client retries sends only its own decision to the fallback (onStoreError '%s')",
      async (onStoreError) => {
        const logger = await startApp(kind, { onStoreError });
        const [source, target, third] = await cluster().masters();
        const [moving, nextDoor] = await keysOn(cluster(), source, 2);
        const elsewhere = [
          ...(await keysOn(cluster(), target, 1)),
          ...(await keysOn(cluster(), third, 1)),
        ];
        const unrelated = [nextDoor, ...elsewhere];
        const limiter = app!.get(RateLimitService);
        for (const key of [moving, ...unrelated]) {
          expect((await limiter.consume(key, TWO_POLICIES)).degraded).toBeUndefined();
        }
        const onSource = cluster().admin(source);
        const onTarget = cluster().admin(target);
        const slot = (await onSource.call('CLUSTER', 'KEYSLOT', moving)) as number;
        const inSlot = () =>
          onSource.call('CLUSTER', 'GETKEYSINSLOT', slot, 100) as Promise<string[]>;
        // The decision's two keys, without the id keys its decisions leave for a moment.
        const keys = stateKeys(await inSlot());
        expect(keys).toHaveLength(2);

        let [openedAt, closedAt] = [Infinity, Infinity];
        const fault = (async () => {
          await sleep(300);
          await onTarget.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', source.id);
          await onSource.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', target.id);
          // One of the decision's two keys moves: the decision gets TRYAGAIN until the other does.
          await onSource.call('MIGRATE', target.host, target.port, '', 0, 5000, 'KEYS', keys[0]);
          openedAt = performance.now();
          await sleep(HALF_MIGRATED_MS);
          await onSource.call('MIGRATE', target.host, target.port, '', 0, 5000, 'KEYS', keys[1]);
          closedAt = performance.now();
          // A node gives a slot away only once it holds no key of it: decisions' id keys go too.
          const left = await inSlot();
          if (left.length > 0) {
            await onSource.call('MIGRATE', target.host, target.port, '', 0, 5000, 'KEYS', ...left);
          }
          for (const master of [target, source, third]) {
            await cluster().admin(master).call('CLUSTER', 'SETSLOT', slot, 'NODE', target.id);
          }
          await sleep(1000);
        })();
        // Callers that alternate between the moving decision and the key next door, as requests
        // of two users reach one app: while the moving decisions hang, nothing else is in flight
        // on their master. Open-loop traffic goes to the other masters.
        const [alternating, steady] = await Promise.all([
          callersAlternating(app!, moving, nextDoor, fault),
          trafficOn(app!, elsewhere, fault),
        ]);
        await fault;
        const samples = [...alternating, ...steady];

        const onUnrelated = samples.filter((s) => unrelated.includes(s.key));
        const onMoving = samples.filter((s) => s.key === moving);
        const fellBack = (of: KeyedSample[]) => of.filter((s) => s.degraded !== undefined);
        const whileOpen = (of: KeyedSample[]) =>
          of.filter((s) => s.at >= openedAt && s.at < closedAt);
        const nextDoorWhileOpen = whileOpen(onUnrelated.filter((s) => s.key === nextDoor));
        rows.push(
          `| ${kind} | half-migrated slot ${HALF_MIGRATED_MS / 1000} s, '${onStoreError}' | the key next door, sent while half-migrated | ${fellBack(nextDoorWhileOpen).length} of ${nextDoorWhileOpen.length} | ${logger.warnings.length} | |`,
          `| ${kind} | half-migrated slot ${HALF_MIGRATED_MS / 1000} s, '${onStoreError}' | other masters' keys | ${fellBack(onUnrelated.filter((s) => elsewhere.includes(s.key))).length} of ${onUnrelated.filter((s) => elsewhere.includes(s.key)).length} | | |`,
          `| ${kind} | half-migrated slot ${HALF_MIGRATED_MS / 1000} s, '${onStoreError}' | the migrating decision's | ${fellBack(onMoving).length} of ${onMoving.length} | | |`,
        );

        expect(samples.filter((s) => s.error !== null)).toEqual([]);
        // The migration was real: the decision over the half-moved slot could not be made...
        expect(fellBack(onMoving).length).toBeGreaterThan(0);
        // ...and it is made on the new master once the slot has moved.
        expect(onMoving.filter((s) => s.at >= closedAt + 500).length).toBeGreaterThan(0);
        expect(fellBack(onMoving.filter((s) => s.at >= closedAt + 500))).toHaveLength(0);
        // No other key fell back before its timeout, not even the one on the same master, however
        // long the fault lasted; past it, a stall of the machine may leave a few to the fallback.
        expect(nextDoorWhileOpen.length).toBeGreaterThan(CALLERS);
        expect(fellBackEarly(onUnrelated)).toEqual([]);
        expectFewTimedOut(onUnrelated);
        // A decision's own trouble is no outage of its server.
        expect(logger.warnings).toEqual([]);
        expect(await onTarget.exists(...keys)).toBe(2);
      },
      60_000,
    );
  });
});

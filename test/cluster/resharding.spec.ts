/**
 * A slot moves between masters (CLUSTER SETSLOT, then MIGRATE of its keys ten at a time), and
 * back, while batches of decisions on it keep coming: no decision is lost, none applies twice, and
 * a low limit stays exact, on every client.
 *
 * Every decision that writes carries a fresh id key, which no node holds. While the slot is open,
 * the source answers such a call TRYAGAIN while it holds some of its keys (else ASK), and the
 * target TRYAGAIN (a key is missing), until every master has the new owner: all writing decisions
 * on the slot wait out the whole migration, not only those whose keys are split. ioredis and
 * GLIDE retry by themselves (ioredis gives up after 16 redirections); node-redis passes TRYAGAIN
 * on at once; the resilience layer the module puts in front of every store tries again while the
 * caller waits. The test goes through that layer, with a timeout that outlasts the migration.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from '@jest/globals';
import { MemoryStore, RedisStore } from '../../lib/index.js';
import { type RedisClient } from '../../lib/stores/redis/clients/redis-client.js';
import { ResilientStore } from '../../lib/stores/resilience/resilient.store.js';
import { type ResolvedPolicy, resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import { isMovingSlot } from '../../lib/stores/redis/moving-slot.js';
import { keySlot } from '../../lib/stores/redis/key-slot.js';
import { CLIENT_KINDS, type ClientKind } from '../support/clients.js';
import { type ClusterMaster, type TestCluster } from '../support/redis-cluster.js';
import { useCluster } from '../support/stores.js';
import { unitsIn } from '../support/weighted-sets.js';
import { inTier } from '../support/matrix.js';

const WORKERS = 8;
const BURST = 16;
const KEYS_PER_PHASE = 20;
const LOW_THRESHOLD = 50;
// Long enough to wait out a migration on a busy machine: the test is about counts, not speed.
const TIMEOUT_MS = 10_000;
// Traffic before a migration starts, and after it ends.
const SETTLE_MS = 300;
// Keys moved per MIGRATE, as `redis-cli --cluster reshard` does by default.
const MIGRATE_COUNT = 10;
// Always allowed: what Redis counted must equal what was answered.
const ROOMY = resolvePolicy({ algorithm: 'sliding-window', period: '1h', threshold: 1e6 }, 'r');
// Used up during the run: exactly the threshold is allowed per key.
const TIGHT = resolvePolicy(
  { algorithm: 'sliding-window', period: '1h', threshold: LOW_THRESHOLD },
  't',
);

interface Tally {
  attempted: Map<string, number>;
  allowed: Map<string, number>;
  /** Answered by `onStoreError` instead of Redis. */
  degraded: number;
  errors: unknown[];
}

const bump = (counts: Map<string, number>, key: string) =>
  counts.set(key, (counts.get(key) ?? 0) + 1);
const total = (counts: Map<string, number>) => [...counts.values()].reduce((a, b) => a + b, 0);
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * {@link WORKERS} loops, each sending {@link BURST} decisions at once over `keys` (round robin)
 * and waiting for all of them, until `migration` has settled.
 */
async function trafficDuring(
  store: ResilientStore,
  keys: readonly string[],
  policy: ResolvedPolicy,
  migration: Promise<unknown>,
): Promise<Tally> {
  const tally: Tally = { attempted: new Map(), allowed: new Map(), degraded: 0, errors: [] };
  let done = false;
  const finish = () => void (done = true);
  migration.then(finish, finish);
  let next = 0;
  const burst = () =>
    Promise.all(
      Array.from({ length: BURST }, () => {
        const key = keys[next++ % keys.length];
        bump(tally.attempted, key);
        return store.consume([key], [policy], [1]).then(
          (decision) => {
            if (decision.degraded !== undefined) tally.degraded++;
            else if (decision.allowed) bump(tally.allowed, key);
          },
          (error: unknown) => void tally.errors.push(error),
        );
      }),
    );
  const worker = async () => {
    while (!done) await burst();
  };
  await Promise.all(Array.from({ length: WORKERS }, worker));
  return tally;
}

/** The master that serves `slot`. */
async function ownerOf(cluster: TestCluster, slot: number): Promise<ClusterMaster> {
  const masters = await cluster.masters();
  return masters.find((m) => m.slots.some(([from, to]) => slot >= from && slot <= to))!;
}

/**
 * Moves `slot` from `from` to `to` as `redis-cli --cluster reshard` does: IMPORTING on the
 * target, MIGRATING on the source, its keys a few at a time, then the new owner on every master.
 * Starts once traffic is under way and resolves a while after, with how long the slot was open.
 */
async function migrateSlot(
  cluster: TestCluster,
  slot: number,
  from: ClusterMaster,
  to: ClusterMaster,
): Promise<number> {
  await sleep(SETTLE_MS);
  const openedAt = performance.now();
  const [source, target] = [cluster.admin(from), cluster.admin(to)];
  await target.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', from.id);
  await source.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', to.id);
  for (;;) {
    const keys = (await source.call('CLUSTER', 'GETKEYSINSLOT', slot, MIGRATE_COUNT)) as string[];
    if (keys.length === 0) break;
    await source.call('MIGRATE', to.host, to.port, '', 0, 5000, 'KEYS', ...keys);
  }
  // The target first: the source's ASK then leads to a node that serves the slot as its own.
  const others = (await cluster.masters()).filter((m) => m.id !== from.id && m.id !== to.id);
  for (const master of [to, from, ...others]) {
    await cluster.admin(master).call('CLUSTER', 'SETSLOT', slot, 'NODE', to.id);
  }
  const openMs = performance.now() - openedAt;
  await sleep(SETTLE_MS);
  return openMs;
}

/**
 * Calls and rejected calls (redirections) of each command, and error replies of each kind
 * (`errorstat_TRYAGAIN`; Redis counts no ASK there), summed over the masters.
 */
async function serverStats(cluster: TestCluster): Promise<Map<string, [number, number]>> {
  const stats = new Map<string, [number, number]>();
  const add = (name: string, calls: string, rejected = '0') => {
    const [c, r] = stats.get(name) ?? [0, 0];
    stats.set(name, [c + Number(calls), r + Number(rejected)]);
  };
  for (const master of await cluster.masters()) {
    const info = await cluster.admin(master).info('all');
    for (const [, name, calls, rejected] of info.matchAll(
      /cmdstat_(\w+):calls=(\d+),.*?rejected_calls=(\d+)/g,
    )) {
      add(name, calls, rejected);
    }
    for (const [, name, count] of info.matchAll(/errorstat_(\w+):count=(\d+)/g)) add(name, count);
  }
  return stats;
}

/** The Redis store behind the resilience layer, as the module builds it; records what it passes on. */
async function guardedStore(client: RedisClient, functions: boolean) {
  const redis = new RedisStore({ client, functions, answerWithinMs: TIMEOUT_MS });
  await redis.warmUp();
  const passedOn: unknown[] = [];
  const execute = redis.execute.bind(redis);
  redis.execute = (call) =>
    execute(call).catch((error: unknown) => {
      passedOn.push(error);
      throw error;
    });
  const warnings: string[] = [];
  const store = new ResilientStore(redis, {
    timeoutMs: TIMEOUT_MS,
    onStoreError: 'deny',
    fallback: new MemoryStore(),
    ownsPrimary: false,
    logger: { warn: (message) => warnings.push(message), log: () => {} },
  });
  return { redis, store, passedOn, warnings };
}

const rows: string[] = [];

describe('batches of decisions on a slot that migrates', () => {
  const cluster = useCluster({ replicas: 0, own: true });

  afterAll(() => {
    process.stdout.write(
      '\nBatches on a migrating slot (both migrations summed):\n' +
        '| client | functions | decisions | store errors (retried) | script calls | redirected | TRYAGAIN | ASKING | slot open ms |\n' +
        `|---|---|---|---|---|---|---|---|---|\n${rows.join('\n')}\n`,
    );
  });

  const cases: Array<[ClientKind, boolean]> = [
    ...CLIENT_KINDS.map((kind): [ClientKind, boolean] => [kind, true]),
    ...inTier<[ClientKind, boolean]>([
      ['ioredis', false],
      ['node-redis', false],
    ]),
  ];

  it.each(cases)(
    'through %s (functions: %s): nothing lost, nothing doubled, a low limit exact',
    async (kind, functions) => {
      const tag = `rs-${randomUUID()}`;
      const slot = keySlot(`{${tag}}`);
      const keysOf = (phase: string) =>
        Array.from({ length: KEYS_PER_PHASE }, (_, i) => `rs:{${tag}}:${phase}${i}`);
      const { redis, store, passedOn, warnings } = await guardedStore(
        await cluster().connect(kind),
        functions,
      );
      expect(redis.usesFunctions).toBe(functions);
      const masters = await cluster().masters();
      await Promise.all(masters.map((m) => cluster().admin(m).config('RESETSTAT')));
      const home = await ownerOf(cluster(), slot);
      const away = masters.find((m) => m.id !== home.id)!;

      // The slot moves away under traffic that is all allowed...
      const [roomyKeys, tightKeys] = [keysOf('roomy'), keysOf('tight')];
      const there = migrateSlot(cluster(), slot, home, away);
      const roomy = await trafficDuring(store, roomyKeys, ROOMY, there);
      const openThereMs = await there;
      expect((await ownerOf(cluster(), slot)).id).toBe(away.id);
      // ...and back under traffic on a low limit.
      const back = migrateSlot(cluster(), slot, away, home);
      const tight = await trafficDuring(store, tightKeys, TIGHT, back);
      const openBackMs = await back;
      expect((await ownerOf(cluster(), slot)).id).toBe(home.id);
      await store.close();

      const stats = await serverStats(cluster());
      const scripts = functions ? ['fcall'] : ['evalsha', 'eval'];
      const [scriptCalls, redirected] = scripts
        .map((name) => stats.get(name) ?? [0, 0])
        .reduce(([c, r], [c2, r2]) => [c + c2, r + r2], [0, 0]);
      const decisions = total(roomy.attempted) + total(tight.attempted);
      const passedOnByKind = new Map<string, number>();
      for (const error of passedOn) bump(passedOnByKind, String(error).slice(0, 30));
      rows.push(
        `| ${kind} | ${functions} | ${decisions} | ${passedOn.length} ${JSON.stringify(Object.fromEntries(passedOnByKind))} | ${scriptCalls} | ${redirected} | ${stats.get('TRYAGAIN')?.[0] ?? 0} | ${stats.get('asking')?.[0] ?? 0} | ${Math.round(openThereMs)} + ${Math.round(openBackMs)} |`,
      );

      // Every decision was answered by Redis; what the store passed on was a refusal to run it.
      expect([...roomy.errors, ...tight.errors]).toEqual([]);
      expect([roomy.degraded, tight.degraded]).toEqual([0, 0]);
      expect(passedOn.filter((error) => !isMovingSlot(error))).toEqual([]);
      expect(warnings).toEqual([]);
      // What the owner counted is what was answered, key by key: nothing lost, nothing doubled.
      const owner = cluster().admin(home);
      for (const key of roomyKeys) {
        const attempted = roomy.attempted.get(key);
        expect([key, roomy.allowed.get(key), await unitsIn(owner, key)]).toEqual([
          key,
          attempted,
          attempted,
        ]);
      }
      for (const key of tightKeys) {
        expect(tight.attempted.get(key)).toBeGreaterThan(LOW_THRESHOLD);
        expect([key, tight.allowed.get(key), await unitsIn(owner, key)]).toEqual([
          key,
          LOW_THRESHOLD,
          LOW_THRESHOLD,
        ]);
      }
      // Decisions went out in batches, and some met the migration.
      expect(scriptCalls).toBeLessThan(decisions / 4);
      expect(redirected).toBeGreaterThan(0);
    },
    60_000,
  );
});

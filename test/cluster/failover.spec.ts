/** A master of a 3+3 cluster dies mid-traffic: nothing hangs, and the promoted replica keeps the count. */
import { createHash, randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { Test } from '@nestjs/testing';
import {
  type RateLimitDecision,
  RateLimitModule,
  RateLimitService,
  RedisStore,
} from '../../lib/index.js';
import { resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import { DECISION_LIBRARY, DECISION_SCRIPTS } from '../../lib/stores/redis/decisions/scripts.js';
import { type ClusterMaster } from '../support/redis-cluster.js';
import { waitFor } from '../support/wait-for.js';
import { useCluster } from '../support/stores.js';
import { unitsIn } from '../support/weighted-sets.js';
import { uniquePrefix } from '../contract/http/fixtures/app.js';

const CALL_BOUND_MS = 5000;

interface Outcome {
  path: 'service' | 'store';
  ms: number;
  result: string;
}

/** Settles with what the call did, or with `'hung'` once it has run past the bound. */
async function bounded(
  path: Outcome['path'],
  call: () => Promise<RateLimitDecision>,
): Promise<Outcome> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<string>(
    (resolve) => (timer = setTimeout(resolve, CALL_BOUND_MS, 'hung')),
  );
  const settled = call().then(
    (d) => (d.degraded ? `degraded:${d.degraded}` : d.allowed ? 'allowed' : 'rejected'),
    (error: unknown) => `error:${error instanceof Error ? error.message : String(error)}`,
  );
  const result = await Promise.race([settled, hung]);
  clearTimeout(timer);
  return { path, ms: Math.round(performance.now() - started), result };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const serves = (master: ClusterMaster, slot: number) =>
  master.slots.some(([from, to]) => slot >= from && slot <= to);

describe('failover on a Redis Cluster of three masters and three replicas', () => {
  // Own nodes even under REDIS_CLUSTER_URLS: this test kills one.
  const cluster = useCluster({ replicas: 1, own: true });

  it('keeps a sliding window exact across a master failover, and no call hangs meanwhile', async () => {
    const client = cluster().client();
    await client.ping();
    // The store decides with scripts, the module (through the service) with Functions: both
    // paths meet the failover.
    const store = new RedisStore({ client, functions: false });
    const ref = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ redis: client, keyPrefix: uniquePrefix() })],
    }).compile();
    const app = ref.createNestApplication({ logger: false });
    await app.init();
    const service = app.get(RateLimitService);

    try {
      const policy = resolvePolicy({ period: '1h', threshold: 5 }, 'failover');
      const key = `failover:{${randomUUID()}}`;
      const slot = await client.cluster('KEYSLOT', key);
      const victim = (await cluster().masters()).find((m) => serves(m, slot))!;
      const [replica] = victim.replicas;
      const consume = () => store.consume([key], [policy], [1]);

      const before = [await consume(), await consume(), await consume()];
      expect(before.map((d) => [d.allowed, d.remaining])).toEqual([
        [true, 4],
        [true, 3],
        [true, 2],
      ]);
      // WAIT counts the writes of the connection it is sent on: the client's own one to the victim.
      const writer = client.nodes('master').find((n) => n.options.port === victim.port)!;
      expect(await writer.call('WAIT', '1', '1000')).toBe(1);
      const onReplica = cluster().admin(replica);
      await onReplica.call('READONLY');
      expect(await unitsIn(onReplica, key)).toBe(3);
      // Scripts are replicated by their effects, so the replica has never loaded this one.
      const sha = createHash('sha1').update(DECISION_SCRIPTS.sw.lua).digest('hex');
      expect(await onReplica.call('SCRIPT', 'EXISTS', sha)).toEqual([0]);
      // The function library, loaded by the module at bootstrap, is replicated as it is.
      const libraries = await onReplica.call(
        'FUNCTION',
        'LIST',
        'LIBRARYNAME',
        DECISION_LIBRARY.name,
      );
      expect(JSON.stringify(libraries)).toContain(DECISION_LIBRARY.name);

      // Other trackers in the victim's slots, so the traffic during the failover meets it.
      const probes: string[] = [];
      while (probes.length < 8) {
        const name = `probe-${randomUUID()}`;
        if (serves(victim, await client.cluster('KEYSLOT', name))) probes.push(name);
      }
      const probePolicy = { period: '1h', threshold: 1000 } as const;
      const probeResolved = resolvePolicy(probePolicy, 'probe');
      const calls: Array<Promise<Outcome>> = [];
      let failingOver = true;
      const traffic = (async () => {
        for (let i = 0; failingOver; i++) {
          const name = probes[i % probes.length];
          calls.push(bounded('service', () => service.consume(name, probePolicy)));
          calls.push(
            bounded('store', () => store.consume([`failover:{${name}}`], [probeResolved], [1])),
          );
          await sleep(50);
        }
      })();

      const victimNode = cluster().nodes.find((n) => n.port === victim.port)!;
      const killedAt = performance.now();
      await victimNode.kill('SIGKILL');
      await waitFor(`promotion of ${replica.port} in place of ${victim.port}`, 20_000, async () => {
        const masters = await cluster().masters();
        return masters.some((m) => m.port === replica.port && serves(m, slot)) || 'not yet';
      });
      const promotedMs = Math.round(performance.now() - killedAt);
      await cluster().waitUntilOk(20_000);
      failingOver = false;
      await traffic;
      const outcomes = await Promise.all(calls);
      // Jest fails the running test on an unhandled rejection: let any the failover left behind
      // surface while this test still runs.
      await sleep(200);

      report(outcomes, promotedMs);
      expect(outcomes.filter((o) => o.result === 'hung')).toEqual([]);
      // Through the module, a decision is Redis's or, past its 100 ms deadline, the fallback's:
      // never an error, and never the seconds the client itself takes to follow the promotion
      // (the store path, which has no deadline, waits those out). The bound leaves a busy
      // machine's scheduling room; what it rules out is a call left to the client.
      const throughModule = outcomes.filter((o) => o.path === 'service');
      expect(
        throughModule.filter((o) => !['allowed', 'degraded:memory'].includes(o.result)),
      ).toEqual([]);
      expect(throughModule.filter((o) => o.ms > 1000)).toEqual([]);
      // Errors and fallback answers are the library's choice; a limit of 1000 must never reject.
      expect(outcomes.filter((o) => o.result === 'rejected')).toEqual([]);

      // The client follows the promotion; the replica had all three requests.
      let replicated: number | undefined;
      await waitFor('answer from the promoted replica through the client', 10_000, async () => {
        replicated = await unitsIn(client, key);
        return true;
      });
      expect(replicated).toBe(3);
      const after = [await consume(), await consume(), await consume()];
      expect(after.map((d) => [d.allowed, d.remaining])).toEqual([
        [true, 1],
        [true, 0],
        [false, 0],
      ]);
      expect(await unitsIn(cluster().admin(replica), key)).toBe(5);
      // EVALSHA met NOSCRIPT on the new master, and the EVAL fallback loaded the script there.
      expect(await cluster().admin(replica).call('SCRIPT', 'EXISTS', sha)).toEqual([1]);
    } finally {
      await app.close();
    }
  }, 60_000);
});

/** Prints what each path answered while the master was down, for the record. */
function report(outcomes: Outcome[], promotedMs: number): void {
  const lines = (['service', 'store'] as const).map((path) => {
    const mine = outcomes.filter((o) => o.path === path);
    const counts = new Map<string, number>();
    for (const o of mine) {
      const kind = o.result.startsWith('error:') ? 'error' : o.result;
      counts.set(kind, (counts.get(kind) ?? 0) + 1);
    }
    const max = Math.max(...mine.map((o) => o.ms));
    return `| ${path} | ${mine.length} | ${[...counts].map(([k, n]) => `${k} ${n}`).join(', ')} | ${max} |`;
  });
  process.stdout.write(
    `\nCluster failover (replica promoted ${promotedMs} ms after SIGKILL):\n` +
      `| path | calls | answers | max ms |\n|---|---|---|---|\n${lines.join('\n')}\n`,
  );
}

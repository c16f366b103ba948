import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, type ClusterOptions, Redis } from 'ioredis';
import { type RedisClient } from '../../lib/stores/redis/clients/redis-client.js';
import {
  type ClientKind,
  closeClient as closeAnyClient,
  CLUSTER_CLIENT_DEFAULTS,
  openClusterClient,
} from './clients.js';
import { waitFor } from './wait-for.js';
import {
  externalServer,
  freePort,
  isRunning,
  notOnPath,
  spawnRedisServer,
  stopProcess,
} from './redis-process.js';

const HOST = '127.0.0.1';
const SLOTS = 16384;

export interface ClusterAddress {
  readonly host: string;
  readonly port: number;
}

/** One redis-server of the cluster. */
export interface ClusterNode extends ClusterAddress {
  /** False once the process has exited; always true for a node of `REDIS_CLUSTER_URLS`. */
  readonly alive: boolean;
  /** Sends `signal` and resolves once the process has exited. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Freezes the process (`SIGSTOP`) or lets it run again (`SIGCONT`); its sockets stay open. */
  freeze(frozen: boolean): void;
}

/** A master as the cluster itself sees it, with the slots it serves and its replicas. */
export interface ClusterMaster extends ClusterAddress {
  readonly id: string;
  readonly slots: ReadonlyArray<readonly [number, number]>;
  readonly replicas: readonly ClusterAddress[];
}

/** A Redis Cluster the tests own (or the one `REDIS_CLUSTER_URLS` names). */
export interface TestCluster {
  readonly nodes: readonly ClusterNode[];
  readonly startupNodes: readonly ClusterAddress[];
  /** True when this is the cluster from `REDIS_CLUSTER_URLS`, which tests must not stop. */
  readonly external: boolean;
  /** A new ioredis Cluster client, tuned to follow a failover promptly; closed by `stop()`. */
  client(options?: ClusterOptions): Cluster;
  /** A new connected cluster client of either library; closed by `stop()`. */
  connect(kind: ClientKind): Promise<RedisClient>;
  /** The masters that serve slots, ordered by their first slot, as a reachable node reports them. */
  masters(): Promise<ClusterMaster[]>;
  /** Resolves once every running node reports `cluster_state:ok` with all slots assigned. */
  waitUntilOk(timeoutMs?: number): Promise<void>;
  /** A plain (non-cluster) connection to one node, for admin commands; closed by `stop()`. */
  admin(node: ClusterAddress): Redis;
  stop(): Promise<void>;
}

export interface StartClusterOptions {
  /** Replicas per master; three masters either way. */
  replicas: 0 | 1;
  /** Spawn nodes even when `REDIS_CLUSTER_URLS` is set: fault tests need nodes of their own to kill. */
  own?: boolean;
  /** More `redis-server` arguments for every node, after the defaults (which they may override). */
  nodeArgs?: readonly string[];
}

/**
 * Starts three masters (plus one replica each when asked) as private redis-servers on free ports
 * and joins them with `redis-cli --cluster create`, or uses `REDIS_CLUSTER_URLS` when it is set.
 */
export async function startCluster(options: StartClusterOptions): Promise<TestCluster> {
  const external = externalServer('REDIS_CLUSTER_URLS');
  if (external && !options.own) {
    const startupNodes = external.split(',').map(parseAddress);
    const nodes = startupNodes.map((address) => ({
      ...address,
      alive: true,
      kill: () =>
        Promise.reject(new Error(`refusing to kill ${address.port}, a node of REDIS_CLUSTER_URLS`)),
      freeze: () => {
        throw new Error(`refusing to freeze ${address.port}, a node of REDIS_CLUSTER_URLS`);
      },
    }));
    return clusterHandle(nodes, startupNodes, true, async () => {});
  }

  const count = options.replicas === 1 ? 6 : 3;
  const spawned: Spawned[] = [];
  const cleanUp = async () => {
    await Promise.all(spawned.map((s) => s.stop()));
  };
  try {
    for (let i = 0; i < count; i++) {
      spawned.push(await spawnNode(options.replicas === 1, options.nodeArgs ?? []));
    }
    const addresses = spawned.map((s) => `${HOST}:${s.node.port}`);
    await run('redis-cli', [
      '--cluster',
      'create',
      ...addresses,
      '--cluster-replicas',
      String(options.replicas),
      '--cluster-yes',
    ]);
  } catch (error) {
    await cleanUp();
    throw error;
  }
  const nodes = spawned.map((s) => s.node);
  const handle = clusterHandle(nodes, nodes.map(addressOf), false, cleanUp);
  try {
    await handle.waitUntilOk();
    if (options.replicas === 1) await waitForReplicas(handle);
  } catch (error) {
    await handle.stop();
    throw error;
  }
  return handle;
}

function clusterHandle(
  nodes: readonly ClusterNode[],
  startupNodes: readonly ClusterAddress[],
  external: boolean,
  stopNodes: () => Promise<void>,
): TestCluster {
  const clients: Cluster[] = [];
  const opened: RedisClient[] = [];
  const admins = new Map<number, Redis>();

  function admin(node: ClusterAddress): Redis {
    const existing = admins.get(node.port);
    if (existing && existing.status !== 'end') return existing;
    const created = new Redis({
      host: node.host,
      port: node.port,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
      connectTimeout: 1000,
    });
    // Nodes may be down on purpose: the failed command reports it; the event adds nothing.
    created.on('error', () => {});
    admins.set(node.port, created);
    return created;
  }

  async function clusterNodes(): Promise<string> {
    const errors: string[] = [];
    for (const node of nodes.filter((n) => n.alive)) {
      try {
        return (await admin(node).call('CLUSTER', 'NODES')) as string;
      } catch (error) {
        errors.push(`${node.port}: ${(error as Error).message}`);
      }
    }
    throw new Error(`no cluster node answered CLUSTER NODES: ${errors.join('; ')}`);
  }

  async function masters(): Promise<ClusterMaster[]> {
    const lines = (await clusterNodes()).trim().split('\n');
    const fields = lines.map((line) => line.split(' '));
    const healthy = (flags: string) => !/fail|noaddr|handshake/.test(flags);
    return fields
      .filter(([, , flags]) => flags.includes('master') && healthy(flags))
      .map(([id, address, , , , , , , ...slots]) => ({
        ...parseAddress(address.split('@')[0]),
        id,
        slots: slots
          .filter((s) => !s.startsWith('['))
          .map((s) => s.split('-').map(Number))
          .map(([from, to]) => [from, to ?? from] as const),
        replicas: fields
          .filter(
            ([, , flags, master]) => flags.includes('slave') && healthy(flags) && master === id,
          )
          .map(([, replica]) => parseAddress(replica.split('@')[0])),
      }))
      .filter((m) => m.slots.length > 0)
      .sort((a, b) => a.slots[0][0] - b.slots[0][0]);
  }

  async function waitUntilOk(timeoutMs = 20_000): Promise<void> {
    await waitFor('cluster_state:ok on every node', timeoutMs, async () => {
      for (const node of nodes.filter((n) => n.alive)) {
        const info = (await admin(node).call('CLUSTER', 'INFO')) as string;
        if (!info.includes('cluster_state:ok')) return `${node.port}: ${firstLine(info)}`;
        if (!info.includes(`cluster_slots_assigned:${SLOTS}`)) return `${node.port}: slots missing`;
      }
      const served = (await masters())
        .flatMap((m) => m.slots)
        .reduce((n, [a, b]) => n + b - a + 1, 0);
      return served === SLOTS ? true : `healthy masters serve ${served} slots`;
    });
  }

  return {
    nodes,
    startupNodes,
    external,
    client: (options = {}) => {
      const client = new Cluster([...startupNodes], { ...CLUSTER_CLIENT_DEFAULTS, ...options });
      clients.push(client);
      return client;
    },
    connect: async (kind) => {
      const client = await openClusterClient(kind, startupNodes);
      opened.push(client);
      return client;
    },
    masters,
    waitUntilOk,
    admin,
    stop: async () => {
      await Promise.all(opened.splice(0).map(closeAnyClient));
      await Promise.all([...clients.splice(0), ...admins.values()].map(closeClient));
      admins.clear();
      await stopNodes();
    },
  };
}

/** Waits until every replica is in sync with its master, so a failover loses nothing. */
async function waitForReplicas(cluster: TestCluster): Promise<void> {
  await waitFor('an in-sync replica for every master', 20_000, async () => {
    const masters = await cluster.masters();
    if (masters.some((m) => m.replicas.length === 0)) return 'a master has no replica yet';
    for (const replica of masters.flatMap((m) => m.replicas)) {
      const info = await cluster.admin(replica).info('replication');
      if (!info.includes('master_link_status:up')) return `${replica.port}: link not up`;
    }
    return true;
  });
}

interface Spawned {
  readonly node: ClusterNode;
  stop(): Promise<void>;
}

async function spawnNode(withReplicas: boolean, nodeArgs: readonly string[]): Promise<Spawned> {
  // Another process may take a free port before redis-server binds it; fresh ports usually do.
  for (let attempt = 1; ; attempt++) {
    try {
      return await spawnNodeOnce(withReplicas, nodeArgs);
    } catch (error) {
      if (attempt === 3 || !/already in use/i.test((error as Error).message)) throw error;
    }
  }
}

async function spawnNodeOnce(withReplicas: boolean, nodeArgs: readonly string[]): Promise<Spawned> {
  // Redis 7 takes the cluster bus port as an option; the default, port + 10000, may be taken or
  // past 65535.
  const [port, busPort] = [await freePort(), await freePort()];
  const dir = mkdtempSync(join(tmpdir(), 'rate-limit-cluster-'));
  const args = [
    ...['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf'],
    ...['--cluster-port', String(busPort), '--cluster-node-timeout', '1000'],
    // The first sync would otherwise wait 5 s for more replicas to share one transfer.
    ...['--repl-diskless-sync-delay', '0'],
    // A replica cut off from its dead master stays eligible to replace it however long that took.
    ...(withReplicas ? ['--cluster-replica-validity-factor', '0'] : []),
    ...nodeArgs,
  ];
  const proc = await spawnRedisServer(port, dir, args, 'REDIS_CLUSTER_URLS').catch((error) => {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  });
  return {
    node: {
      host: HOST,
      port,
      get alive() {
        return isRunning(proc);
      },
      kill: (signal = 'SIGTERM') => stopProcess(proc, signal),
      freeze: (frozen) => {
        if (isRunning(proc)) proc.kill(frozen ? 'SIGSTOP' : 'SIGCONT');
      },
    },
    stop: async () => {
      // A frozen process would take a signal to end only once it runs again.
      if (isRunning(proc)) proc.kill('SIGCONT');
      await stopProcess(proc);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { timeout: 30_000 }, (error, stdout, stderr) => {
      if ((error as NodeJS.ErrnoException | null)?.code === 'ENOENT')
        reject(notOnPath(command, 'REDIS_CLUSTER_URLS'));
      else if (error) reject(new Error(`${command} ${args.join(' ')} failed:\n${stdout}${stderr}`));
      else resolve(stdout);
    });
  });
}

function closeClient(client: Redis | Cluster): Promise<void> {
  if (client.status === 'end') return Promise.resolve();
  // QUIT waits for a reply a dead node never sends; give it a moment, then drop the sockets.
  const quit = client.quit().then(
    () => {},
    () => {},
  );
  let timer: NodeJS.Timeout | undefined;
  const giveUp = new Promise<void>((resolve) => (timer = setTimeout(resolve, 1000)));
  return Promise.race([quit, giveUp]).then(() => {
    clearTimeout(timer);
    client.disconnect();
  });
}

function parseAddress(text: string): ClusterAddress {
  const url = new URL(text.includes('://') ? text : `redis://${text.trim()}`);
  return { host: url.hostname, port: Number(url.port || 6379) };
}

const addressOf = ({ host, port }: ClusterAddress): ClusterAddress => ({ host, port });
const firstLine = (text: string) => text.split('\n')[0].trim();

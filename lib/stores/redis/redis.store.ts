import { configError } from '../../policy/validation.js';
import { encodeCall, type EncodedCall, opArg } from '../call-encoding.js';
import { OperationStore } from '../operation-store.js';
import { type StoreCall } from '../../store-contract/store-call.js';
import { type RateLimitDecision } from '../../store-contract/store.interface.js';
import { type RedisClient, scriptClientFor } from './clients/redis-client.js';
import { type EvictionSetting, type RedisStoreOptions } from './redis-store-options.js';
import { answeredWithin, pingWithin } from './ping.js';
import { type ScriptClient, StoreNotConnectedError } from './clients/script-client.js';
import { TIME_REFUSED } from './caller-clock.js';
import { RedisTime } from './redis-time.js';
import { ClientWatch } from './client-watch.js';
import { DecisionBatcher } from './decisions/decision-batcher.js';
import { DecisionRunner } from './decisions/decision-runner.js';
import { LibraryMemory } from './decisions/library-memory.js';
import { DecisionSender } from './decisions/decision-sender.js';
import { ReconnectWaiters } from './lost-replies.js';
import { DECISION_SCRIPTS } from './decisions/scripts.js';
import { callsOwnError } from '../resilience/store-failure.js';
import { SlotGroups } from './slot-groups.js';

export type { EvictionSetting, RedisStoreOptions } from './redis-store-options.js';

// A peek over no keys: it records nothing, and answers with Redis's time.
const WARM_UP_OP = opArg(
  encodeCall({ op: 'peek', limits: { keys: [], policies: [], costs: [] } })!,
);

// Decisions per batch at most (see DecisionBatcher). At 256 in flight, 8 went faster than 4, 12,
// 16 and 32: Redis answers everything one read brought before writing, so a few large batches
// move in lockstep, Redis idle while this process works and the other way round.
const DEFAULT_BATCH_SIZE = 8;

/**
 * Shares rate-limit state across every app instance through Redis. Each decision is one atomic
 * Lua call over all of a route's policies, reading the time from Redis itself (where scripts may
 * not, carrying the store's estimate of it: see docs/redis.md, Clock): an FCALL of the
 * module's function library, loaded by `warmUp`, or where Functions are unavailable an EVALSHA
 * (and EVAL when the server has lost its script cache). Works with ioredis, iovalkey, node-redis
 * and Valkey GLIDE alike.
 * While the client is not connected, a decision fails at once and nothing is sent, so no decision
 * waits in a client's offline queue to be counted after the fallback has answered it.
 *
 * @example
 * ```ts
 * RateLimitModule.forRoot({ store: new RedisStore({ client: new Redis(process.env.REDIS_URL) }) });
 * // or, with node-redis:
 * RateLimitModule.forRoot({ store: new RedisStore({ client: createClient() }) }); // the module connects it
 * ```
 */
export class RedisStore extends OperationStore {
  readonly client: RedisClient;
  private readonly scripts: ScriptClient;
  private readonly runner: DecisionRunner;
  private readonly batcher: DecisionBatcher;
  private readonly memory: LibraryMemory;
  private readonly ownsClient: boolean;
  private readonly time: RedisTime;
  private readonly reconnected: ReconnectWaiters;
  private readonly watch: ClientWatch;
  private readonly sender: DecisionSender;
  private readonly groups: SlotGroups | undefined;

  constructor(options: RedisStoreOptions) {
    super();
    const scripts = scriptClientFor(options?.client);
    if (scripts === undefined) {
      throw new TypeError(
        'RedisStore: client must be an ioredis or iovalkey Redis or Cluster, a node-redis client or cluster, or a Valkey GLIDE GlideClient or GlideClusterClient',
      );
    }
    this.client = options.client;
    this.scripts = scripts;
    this.runner = new DecisionRunner(scripts, options.functions ?? true);
    const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
    if (!Number.isInteger(batchSize) || batchSize < 1) {
      throw configError('RedisStore', 'batchSize', batchSize, 'an integer of 1 or more');
    }
    this.groups = options.slotGroups === undefined ? undefined : new SlotGroups(options.slotGroups);
    this.memory = new LibraryMemory(scripts, () => this.runner.usesFunctions);
    this.batcher = new DecisionBatcher(
      this.runner,
      this.memory,
      batchSize,
      scripts.nodeOf !== undefined,
    );
    this.reconnected = new ReconnectWaiters(scripts);
    this.watch = new ClientWatch(scripts);
    this.ownsClient = options.ownsClient ?? false;
    this.time = new RedisTime(scripts, options.clock, options.answerWithinMs);
    this.sender = new DecisionSender(
      scripts,
      this.batcher,
      this.time,
      this.reconnected,
      this.memory,
      () => this.notConnected(),
    );
  }

  /**
   * Sets `answerWithinMs` when it was not given: the module does so with its `timeout` for a
   * store it is handed, as for the stores it builds.
   */
  answerWithinByDefault(ms: number): void {
    this.time.answerWithinByDefault(ms);
  }

  override get kind(): string {
    return 'redis';
  }

  /** `'ioredis'`, `'iovalkey'`, `'node-redis'` or `'valkey-glide'`. */
  get library(): string {
    return this.scripts.library;
  }

  /**
   * The client as the store runs it, for the other parts kept in the same Redis (the overrides,
   * see `RedisOverrideSource.forStore`). Not for applications.
   *
   * @internal
   */
  get scriptClient(): ScriptClient {
    return this.scripts;
  }

  /** Whether a decision sent now would reach Redis at once (else it fails without sending). */
  get connected(): boolean {
    return this.scripts.ready();
  }

  /** Whether the client is a cluster's: decisions go to the master of their keys' slot. */
  get isCluster(): boolean {
    return this.scripts.nodeOf !== undefined;
  }

  /** Whether decisions go out as FCALL (else as EVALSHA). */
  get usesFunctions(): boolean {
    return this.runner.usesFunctions;
  }

  /**
   * Sends PING (to a cluster's first primary) and resolves with the round trip in ms. Rejects at
   * once, sending nothing, while the client is not connected, and when no reply comes within
   * `withinMs`. For health checks: decisions never wait on it.
   */
  ping(withinMs: number): Promise<number> {
    if (!this.scripts.ready()) return Promise.reject(this.notConnected());
    return pingWithin(this.scripts, withinMs);
  }

  /**
   * Loads the function library, or where Functions are unavailable runs each decision script
   * once, so that the first burst of traffic does not meet NOSCRIPT on every call at once. Then
   * learns Redis's clock with a decision over no keys (which records nothing), so that even the
   * first decisions carry a deadline. Resolves whatever happens; a failure only leaves that for
   * the first replies.
   */
  async warmUp(): Promise<void> {
    if (!this.scripts.ready()) return;
    await this.runner.load();
    const learning = this.memory.learn();
    const scripts = this.runner.usesFunctions
      ? [DECISION_SCRIPTS.mixed]
      : Object.values(DECISION_SCRIPTS);
    await Promise.all([
      this.batcher.warmUp(),
      ...scripts.map((script) =>
        this.runner.run(script, [], [WARM_UP_OP, '']).then(
          (reply) =>
            (reply as number[])[0] === TIME_REFUSED
              ? this.time.callerClock.adopt()
              : this.time.observe((reply as number[])[1]),
          // The first decision's reply teaches the same.
          () => {},
        ),
      ),
      learning,
    ]);
  }

  /**
   * How each primary (each master of a cluster) frees memory when it is full: its
   * `maxmemory-policy`, and its `maxmemory` in bytes (0: no limit, so nothing is ever evicted).
   * Rejects where `CONFIG GET` is refused (an ACL, a managed service that disables it) or the
   * client is not connected. The module reads it at bootstrap to warn when keys can be evicted.
   *
   * @example
   * ```ts
   * const evicting = (await store.memoryPolicies()).some(
   *   ({ policy, maxmemory }) => policy !== 'noeviction' && maxmemory > 0,
   * );
   * ```
   */
  async memoryPolicies(): Promise<EvictionSetting[]> {
    if (!this.scripts.ready()) throw this.notConnected();
    const configs = await this.scripts.readConfig('maxmemory*');
    return configs.map((config) => ({
      policy: config['maxmemory-policy'] ?? 'unknown',
      maxmemory: Number(config.maxmemory ?? 0),
    }));
  }

  /**
   * The Redis node that decides on `keys`: on a cluster, the master that the client's slot map
   * gives for their slot (`host:port`; '' until the map is known); '' for a single server.
   */
  override nodeOf(keys: readonly string[]): string {
    const nodeOf = this.scripts.nodeOf;
    if (nodeOf === undefined || keys.length === 0) return '';
    return nodeOf(this.groups === undefined ? keys[0] : this.groups.place(keys[0]));
  }

  /**
   * Sends PING to the cluster master `node` (as {@link nodeOf} names it) and resolves with the
   * round trip in ms; rejects at once on a single server or while the client is not connected,
   * and when no reply comes within `withinMs`. The resilience layer asks it when a decision got
   * no answer in time, to tell a master that does not answer from a slot that is moving.
   */
  pingNode(node: string, withinMs: number): Promise<number> {
    const pingNode = this.scripts.pingNode;
    if (pingNode === undefined || !this.scripts.ready()) return Promise.reject(this.notConnected());
    return answeredWithin(() => pingNode(node), withinMs);
  }

  /** Whether the client was handed over without being connected (node-redis needs `connect()`). */
  get neverOpened(): boolean {
    return this.scripts.neverOpened();
  }

  /**
   * Listens to the client's `error` events (node-redis throws one nobody listens to, ending the
   * process), naming the latest in the errors of decisions that fail meanwhile, and calls
   * `onReady` on each (re)connection. The module watches every client it uses. Returns the
   * listeners' removal.
   */
  watchClient(onReady: () => void = () => {}): () => void {
    return this.watch.watch(onReady);
  }

  /**
   * Connects a client nobody has opened (node-redis without `connect()`) in the background, until
   * it is open; `close()` closes it then. Until it is ready, decisions fail at once.
   */
  connectInBackground(): void {
    this.watch.open();
  }

  /** The latest error the client reported since it was last ready, once watched. */
  get connectionError(): Error | undefined {
    return this.watch.error;
  }

  /** Decides `call` in Redis: one atomic script call over all of its policies. */
  execute(call: StoreCall): Promise<RateLimitDecision> {
    if (this.groups !== undefined) call = { ...call, limits: this.groups.placeAll(call.limits) };
    let encoded: EncodedCall | undefined;
    try {
      encoded = encodeCall(call);
    } catch (error) {
      return Promise.reject(callsOwnError(error, 'encode the call'));
    }
    // A release or renewal of a decision that took no lease: nothing to do.
    if (encoded === undefined) return Promise.resolve(call.of!);
    return this.sender.send(call.limits, encoded, call.correction);
  }

  private notConnected(): StoreNotConnectedError {
    return new StoreNotConnectedError(this.scripts.library, this.watch.error?.message);
  }

  /** Closes the client if the store owns or connected it, resolving once it has ended. */
  override async close(): Promise<void> {
    this.watch.stop();
    this.memory.close();
    if (this.ownsClient || this.watch.opened) await this.scripts.close();
  }
}

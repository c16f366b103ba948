import { configError } from '../../policy/validation.js';
import { encodeCall, type EncodedCall, keysOf, opArg } from '../call-encoding.js';
import { decisionFromReply } from '../decision.js';
import { giveBackLate } from '../resilience/late-replies.js';
import { OperationStore } from '../operation-store.js';
import { type Limits, type StoreCall } from '../../store-contract/store-call.js';
import { type RateLimitDecision } from '../../store-contract/store.interface.js';
import { type RedisClient, scriptClientFor } from './clients/redis-client.js';
import { type EvictionSetting, type RedisStoreOptions } from './redis-store-options.js';
import { answeredWithin, pingWithin } from './ping.js';
import { type ScriptClient, StoreNotConnectedError } from './clients/script-client.js';
import { StoreLateError } from './answer-deadline.js';
import { TIME_REFUSED } from './caller-clock.js';
import { RedisTime } from './redis-time.js';
import { ClientWatch } from './client-watch.js';
import { DecisionBatcher } from './decisions/decision-batcher.js';
import { DecisionRunner } from './decisions/decision-runner.js';
import { giveBackIfRun, ReconnectWaiters, sendResending } from './lost-replies.js';
import { policyArg } from './decisions/policy-args.js';
import { DECISION_SCRIPTS, scriptFor } from './decisions/scripts.js';
import { callsOwnError, failsThisDecisionOnly } from '../resilience/store-failure.js';
import { isMovingSlot, retryWhileSlotMoves } from './moving-slot.js';

export type { EvictionSetting, RedisStoreOptions } from './redis-store-options.js';

// A peek over no keys: it records nothing, and answers with Redis's time.
const WARM_UP_OP = opArg(
  encodeCall({ op: 'peek', limits: { keys: [], policies: [], costs: [] } })!,
);

// With no deadline, Redis keeps a decision's id for 5 s (see decide.lua): a copy sent later
// could apply again, so resending stops well before.
const RESEND_WITHOUT_DEADLINE_MS = 4000;

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
  private readonly ownsClient: boolean;
  private readonly time: RedisTime;
  private readonly reconnected: ReconnectWaiters;
  private readonly watch: ClientWatch;

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
    this.batcher = new DecisionBatcher(this.runner, batchSize, scripts.nodeOf !== undefined);
    this.reconnected = new ReconnectWaiters(scripts);
    this.watch = new ClientWatch(scripts);
    this.ownsClient = options.ownsClient ?? false;
    this.time = new RedisTime(scripts, options.clock, options.answerWithinMs);
  }

  /**
   * Sets `answerWithinMs` when it was not given: the module does so with its `timeout` for a
   * store it is handed, as for the stores it builds.
   */
  answerWithinByDefault(ms: number): void {
    this.time.answerWithinByDefault(ms);
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
    if (!this.scripts.ready()) return Promise.reject(this.notConnected);
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
    if (!this.scripts.ready()) throw this.notConnected;
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
  nodeOf(keys: readonly string[]): string {
    const nodeOf = this.scripts.nodeOf;
    return nodeOf === undefined || keys.length === 0 ? '' : nodeOf(keys[0]);
  }

  /**
   * Sends PING to the cluster master `node` (as {@link nodeOf} names it) and resolves with the
   * round trip in ms; rejects at once on a single server or while the client is not connected,
   * and when no reply comes within `withinMs`. The resilience layer asks it when a decision got
   * no answer in time, to tell a master that does not answer from a slot that is moving.
   */
  pingNode(node: string, withinMs: number): Promise<number> {
    const pingNode = this.scripts.pingNode;
    if (pingNode === undefined || !this.scripts.ready()) return Promise.reject(this.notConnected);
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
    let encoded: EncodedCall | undefined;
    try {
      encoded = encodeCall(call);
    } catch (error) {
      return Promise.reject(callsOwnError(error, 'encode the call'));
    }
    // A release or renewal of a decision that took no lease: nothing to do.
    if (encoded === undefined) return Promise.resolve(call.of!);
    return this.decide(call.limits, encoded, call.correction);
  }

  /** Runs the decision: `op` and its `at` are its first argument (see `decide.lua`). */
  private async decide(
    limits: Limits,
    encoded: EncodedCall,
    correction?: true,
  ): Promise<RateLimitDecision> {
    if (!this.scripts.ready()) {
      // A correction waits for the client to be back, as a resend does; a decision cannot.
      const until = performance.now() + RESEND_WITHOUT_DEADLINE_MS;
      if (!correction || !(await this.reconnected.ready(until))) throw this.notConnected;
    }
    // Only where Redis refuses TIME in scripts: its clock is read once per connection.
    const { callerClock } = this.time;
    if (callerClock.inUse) await callerClock.fresh();
    const { keys, policies } = limits;
    const n = keys.length;
    const sentAt = performance.now();
    const args = this.argsOf(limits, encoded, sentAt, correction);
    // A decision that applies something carries an id (its own, or its batch's), so that no copy
    // of it applies again.
    const allKeys = keysOf(keys, limits.ledgers, encoded);
    const job = this.batcher.job(scriptFor(policies), allKeys, args, encoded.applies && n > 0);
    // A copy is sent only while its caller still waits; a correction has no caller.
    const untilMs =
      sentAt + ((correction ? undefined : this.time.timeoutMs) ?? RESEND_WITHOUT_DEADLINE_MS);
    const run = () => this.batcher.send(job);
    const resend = () => sendResending(run, this.reconnected, untilMs) as Promise<number[]>;
    // Only a cluster refuses a decision because its slot is moving: it is tried again meanwhile.
    const send = this.isCluster
      ? () => resend().catch((error: unknown) => retryWhileSlotMoves(error, untilMs, resend))
      : resend;
    let reply: number[];
    try {
      reply = await send();
      if (reply[0] === TIME_REFUSED) {
        // Nothing was applied: the same decision goes again, carrying the time itself.
        await callerClock.adopt();
        args[1] = this.time.arg(sentAt, correction);
        reply = await send();
      }
    } catch (error) {
      // The fallback answers it; if Redis ran it meanwhile, that is given back once it can tell.
      const deadlineSent = !correction && this.time.hasDeadline && /\d$/.test(args[1]);
      if (deadlineSent && (encoded.op === 'c' || encoded.op === 'w')) {
        const giveBack = (r: number[]) =>
          giveBackLate(this, limits, decisionFromReply(r, policies));
        giveBackIfRun(error, run, this.reconnected, untilMs, giveBack);
      }
      // The slot still moving when its caller stops waiting: the decision's trouble, not its server's.
      throw isMovingSlot(error) ? failsThisDecisionOnly(error) : error;
    }
    if (reply[0] === -1) {
      this.time.observe(reply[1]);
      throw new StoreLateError();
    }
    // After the policies' answers: the time, then the lease id if one was taken.
    const at = 1 + 4 * n;
    try {
      this.time.observe(reply[at]);
      return decisionFromReply(
        reply,
        policies,
        encoded.op === 'w' ? this.time.offsetUs() : undefined,
      );
    } catch (error) {
      throw callsOwnError(error, "read Redis's reply");
    }
  }

  /**
   * The decision's arguments: the operation, the clock, then each policy (a calendar's window
   * starts computed here). What fails here is the call's own error, not Redis's.
   */
  private argsOf(
    { policies, costs: callCosts }: Limits,
    encoded: EncodedCall,
    sentAt: number,
    correction?: true,
  ): string[] {
    try {
      const costs = encoded.costs ?? callCosts;
      const args = new Array<string>(2 + policies.length);
      args[0] = opArg(encoded);
      args[1] = this.time.arg(sentAt, correction);
      for (let i = 0; i < policies.length; i++) {
        args[2 + i] = policyArg(policies[i], costs[i], encoded.blockUs, this.time.nowUs);
      }
      return args;
    } catch (error) {
      throw callsOwnError(error, 'build the decision');
    }
  }

  private get notConnected(): StoreNotConnectedError {
    return new StoreNotConnectedError(this.scripts.library, this.watch.error?.message);
  }

  /** Closes the client if the store owns or connected it, resolving once it has ended. */
  async close(): Promise<void> {
    this.watch.stop();
    if (this.ownsClient || this.watch.opened) await this.scripts.close();
  }
}

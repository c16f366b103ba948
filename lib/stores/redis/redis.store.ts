import { type Cluster, type Redis } from 'ioredis';
import { type ResolvedPolicy } from '../../rate-limit.policy.js';
import { toMicros } from '../clock.js';
import { type Clock, type RateLimitDecision, type RateLimitStore } from '../store.interface.js';
import { SCRIPTS } from './scripts.js';

export interface RedisStoreOptions {
  /** An ioredis client or cluster. */
  client: Redis | Cluster;
  /** Close the client in `close()`. Set by the module for clients it created itself. */
  ownsClient?: boolean;
  /**
   * Test clock in milliseconds, passed to the scripts instead of Redis `TIME`. Leave unset in
   * production: one Redis clock is what keeps every instance in agreement.
   */
  clock?: Clock;
}

type ScriptReply = [allowed: number, remaining: number, retryAfterMs: number, resetAfterMs: number];
type ScriptCommand = (
  key: string,
  windowUs: number,
  limit: number,
  cost: number,
  nowUs: number | '',
) => Promise<ScriptReply>;

/**
 * Shares rate-limit state across every app instance through Redis. Each decision is one
 * atomic Lua script, sent with EVALSHA (ioredis falls back to EVAL when the server lost its
 * script cache), reading the time from Redis itself.
 *
 * @example
 * ```ts
 * RateLimitModule.forRoot({ store: new RedisStore({ client: new Redis(process.env.REDIS_URL) }) });
 * ```
 */
export class RedisStore implements RateLimitStore {
  readonly client: Redis | Cluster;
  private readonly ownsClient: boolean;
  private readonly clock: Clock | undefined;
  private readonly slidingWindow: ScriptCommand;

  constructor(options: RedisStoreOptions) {
    this.client = options.client;
    this.ownsClient = options.ownsClient ?? false;
    this.clock = options.clock;
    const { command, lua } = SCRIPTS.slidingWindow;
    this.client.defineCommand(command, { numberOfKeys: 1, lua });
    const bound = (this.client as unknown as Record<string, ScriptCommand>)[command];
    this.slidingWindow = bound.bind(this.client);
  }

  async consume(key: string, policy: ResolvedPolicy, cost: number): Promise<RateLimitDecision> {
    const now = this.clock === undefined ? '' : toMicros(this.clock());
    const [allowed, remaining, retryAfterMs, resetAfterMs] = await this.slidingWindow(
      key,
      policy.periodUs,
      policy.threshold,
      cost,
      now,
    );
    return {
      allowed: allowed === 1,
      limit: policy.threshold,
      remaining,
      retryAfterMs,
      resetAfterMs,
    };
  }

  /** Closes the client if the store owns it, resolving once the connection has really ended. */
  async close(): Promise<void> {
    if (!this.ownsClient || this.client.status === 'end') return;
    if (this.client.status === 'wait') return this.client.disconnect();
    const ended = new Promise<void>((resolve) => this.client.once('end', () => resolve()));
    try {
      await this.client.quit();
    } catch {
      // Never connected, or the connection broke: drop it without waiting for a reply.
      this.client.disconnect();
    }
    // Shutdown must finish even if the socket never reports its end.
    let timer: NodeJS.Timeout | undefined;
    const giveUp = new Promise<void>((resolve) => (timer = setTimeout(resolve, 2000).unref()));
    await Promise.race([ended, giveUp]);
    clearTimeout(timer);
  }
}

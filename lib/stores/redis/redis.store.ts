import { type Cluster, type Redis } from 'ioredis';
import { type ResolvedPolicy } from '../../rate-limit.policy.js';
import { toMicros } from '../clock.js';
import { combineDecisions, policyDecision } from '../decision.js';
import {
  type Clock,
  type PolicyDecision,
  type RateLimitDecision,
  type RateLimitStore,
} from '../store.interface.js';
import { DECISION_SCRIPTS } from './scripts.js';

export interface RedisStoreOptions {
  /** An ioredis client or cluster. */
  client: Redis | Cluster;
  /** Close the client in `close()`. Set by the module for clients it created itself. */
  ownsClient?: boolean;
  /**
   * Test clock in milliseconds, passed to the script instead of Redis `TIME`. Leave unset in
   * production: one Redis clock is what keeps every instance in agreement.
   */
  clock?: Clock;
}

type DecideCommand = (...args: Array<string | number>) => Promise<number[]>;

// Redis expires keys in real time; under a simulated clock, pad TTLs by this much so a key cannot
// vanish while the simulated time says it still matters.
const SIMULATED_CLOCK_TTL_SLACK_MS = 600_000;

/**
 * Shares rate-limit state across every app instance through Redis. Each decision is one atomic
 * Lua script over all of a route's policies, sent with EVALSHA (ioredis falls back to EVAL when
 * the server has lost its script cache), reading the time from Redis itself.
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
  /** A bound command per script, by algorithm code, plus `mixed`. */
  private readonly commands = new Map<string, DecideCommand>();

  constructor(options: RedisStoreOptions) {
    this.client = options.client;
    this.ownsClient = options.ownsClient ?? false;
    this.clock = options.clock;
    const commands = this.client as unknown as Record<string, DecideCommand>;
    for (const [code, { command, lua }] of Object.entries(DECISION_SCRIPTS)) {
      this.client.defineCommand(command, { lua });
      this.commands.set(code, commands[command].bind(this.client));
    }
  }

  async consume(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
  ): Promise<RateLimitDecision> {
    const n = keys.length;
    const args: Array<string | number> = [n, ...keys];
    if (this.clock === undefined) args.push('', 0);
    else args.push(toMicros(this.clock()), SIMULATED_CLOCK_TTL_SLACK_MS);
    for (let i = 0; i < n; i++) {
      const p = policies[i];
      args.push(p.code, p.periodUs, p.threshold, p.burst, costs[i]);
    }
    const reply = await this.commandFor(policies)(...args);
    const answers: PolicyDecision[] = new Array(n);
    for (let i = 0, r = 1; i < n; i++, r += 4) {
      answers[i] = policyDecision(
        policies[i],
        reply[r] === 1,
        reply[r + 1],
        reply[r + 2],
        reply[r + 3],
      );
    }
    return combineDecisions(reply[0] === 1, answers);
  }

  /** The script with only the algorithm every policy uses, or the one with all of them. */
  private commandFor(policies: readonly ResolvedPolicy[]): DecideCommand {
    const code = policies[0].code;
    for (let i = 1; i < policies.length; i++) {
      if (policies[i].code !== code) return this.commands.get('mixed')!;
    }
    return this.commands.get(code)!;
  }

  /** Closes the client if the store owns it, resolving once the connection has really ended. */
  async close(): Promise<void> {
    if (!this.ownsClient || this.client.status === 'end') return;
    // Not connected: there is nothing to flush, and no 'end' event may ever come.
    if (this.client.status !== 'ready' && this.client.status !== 'connect')
      return this.client.disconnect();
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

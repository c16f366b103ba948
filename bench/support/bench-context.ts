/** What every section gets from the driver. */
import { type Redis } from 'ioredis';

export interface BenchContext {
  /** The private redis-server every contender talks to. */
  readonly redisUrl: string;
  /** For FLUSHALL, INFO and MEMORY USAGE; never used by a contender. */
  readonly admin: Redis;
  /** The private valkey-server of the Valkey rows, and its admin client; absent without one. */
  readonly valkey?: { readonly url: string; readonly admin: Redis };
  /** Ten times smaller workloads: a smoke check, not results. */
  readonly quick: boolean;
}

/** Progress on stderr, so stdout holds only the tables. */
export const progress = (section: string, message: string) =>
  process.stderr.write(`[${section}] ${message}\n`);

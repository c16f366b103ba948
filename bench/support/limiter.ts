/** What every contender looks like to a section: one decision at a time on its own Redis client. */
import { type Redis } from 'ioredis';

/** One limit, the same for every contender of a run. */
export interface Limit {
  readonly threshold: number;
  readonly periodMs: number;
}

export interface Limiter {
  /** Its own client, default options unless the row says otherwise. */
  readonly client: Redis;
  /** Counts one request against `key`; resolves to whether it was allowed. */
  decide(key: string): Promise<boolean>;
  /** Text that appears in a command's arguments exactly when the command concerns `key`. */
  redisKeyMarker(key: string): string;
  /** Decisions answered without Redis because it failed or was too slow (ours only). */
  degraded(): number;
  close(): Promise<void>;
}

export const neverDegraded = () => 0;

/** Quits politely, or drops the connection if it is already broken. */
export async function closeClient(client: Redis): Promise<void> {
  await client.quit().catch(() => client.disconnect());
}

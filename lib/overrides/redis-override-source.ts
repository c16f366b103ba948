import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { configError } from '../policy/validation.js';
import { type ChannelSubscription } from '../stores/redis/clients/channel-subscription.js';
import { type DecisionScript } from '../stores/redis/decisions/scripts.js';
import { type RedisStore } from '../stores/redis/redis.store.js';
import {
  type ScriptClient,
  StoreNotConnectedError,
} from '../stores/redis/clients/script-client.js';
import { MAX_OVERRIDES, shortened } from './override-bounds.js';
import {
  type LimitOverride,
  type OverrideEntry,
  type OverrideGeneration,
  type OverrideListing,
  type OverrideSource,
  type OverrideWrite,
  type SkippedOverride,
} from './override-source.js';

/**
 * How long the hash lives while it holds an override without ttl, renewed by every `set` and every
 * `list`: such an override lasts until cleared as long as some instance lists the overrides at
 * least once in this time, which every running instance does on its own period.
 */
export const LASTING_OVERRIDE_HORIZON_MS = 30 * 24 * 3600 * 1000;

/**
 * The script that sets, clears and lists the overrides in Redis (`overrides.lua`), run like the
 * decision scripts: EVALSHA, then EVAL when the server has lost it. Not a function of the decision
 * library: it runs a few times a minute at most, so a body run on each call costs nothing that
 * matters, and it needs no `FUNCTION` permission of its own.
 */
export const OVERRIDES_SCRIPT: DecisionScript = (() => {
  const lua = readFileSync(new URL('./overrides.lua', import.meta.url), 'utf8');
  return Object.freeze({
    command: 'rateLimitOverrides',
    lua,
    sha: createHash('sha1').update(lua).digest('hex'),
  });
})();

/** What the script answers when the server refused `TIME` inside it (see `overrides.lua`). */
const TIME_REFUSED = -2;
/** The time left the script lists for a value it cannot read. */
const UNREADABLE = -2;

/**
 * The overrides in force on every instance that shares a Redis: one hash per key prefix,
 * `<prefix>:{overrides}` (its own hash tag, so one slot on a cluster), changed and read by one
 * atomic script call each (`overrides.lua`), on Redis's clock. Each change is published on
 * `<prefix>:{overrides}:changed`, which {@link watch} follows on a connection of its own (see
 * docs/redis.md, Override keys). Where the client can give none, instances converge on the
 * registry's periodic reading alone.
 *
 * @example
 * ```ts
 * const source = RedisOverrideSource.forStore(new RedisStore({ client }), 'rate-limit');
 * await source.set({ policy: 'api', tracker: 'tenant-7', limit: { threshold: 500 }, ttlMs: 60_000 });
 * source.watch(() => void source.list().then(apply));
 * ```
 */
export class RedisOverrideSource implements OverrideSource {
  private readonly key: string;
  private readonly channel: string;
  private readonly listeners = new Set<() => void>();
  private subscription: ChannelSubscription | undefined;
  private closed = false;

  private constructor(
    private readonly scripts: ScriptClient,
    keyPrefix: string,
  ) {
    this.key = `${keyPrefix}:{overrides}`;
    this.channel = `${this.key}:changed`;
  }

  /** The source on the client of `store`, for the module's `keyPrefix`. */
  static forStore(store: RedisStore, keyPrefix: string): RedisOverrideSource {
    return new RedisOverrideSource(store.scriptClient, keyPrefix);
  }

  /**
   * Rejects a `ttlMs` that is not a positive whole number of ms: the hash's TTL is made from it,
   * and none of those could be one. Resolves false, storing nothing, for a new override past
   * `MAX_OVERRIDES` (decided in the script, so two instances cannot both add the last one).
   */
  async set(write: OverrideWrite): Promise<boolean> {
    const ttlMs = write.ttlMs;
    if (ttlMs !== undefined && !(Number.isSafeInteger(ttlMs) && ttlMs > 0)) {
      throw configError('RedisOverrideSource.set', 'ttlMs', ttlMs, 'a positive whole number of ms');
    }
    const { threshold, periodMs, burst } = write.limit;
    const limit = JSON.stringify({ threshold, periodMs, burst });
    const ttl = ttlMs === undefined ? '' : String(ttlMs);
    const horizon = String(LASTING_OVERRIDE_HORIZON_MS);
    const field = fieldOf(write.policy, write.tracker);
    const reply = await this.run('set', this.channel, field, limit, ttl, horizon, MAX_STRING);
    return Number(reply[1]) === 1;
  }

  async clear(policy: string, tracker?: string): Promise<boolean> {
    const reply = await this.run('clear', this.channel, fieldOf(policy, tracker));
    return Number(reply[1]) > 0;
  }

  async list(): Promise<OverrideListing> {
    const reply = await this.run('list', String(LASTING_OVERRIDE_HORIZON_MS));
    const entries: OverrideEntry[] = [];
    const skipped: SkippedOverride[] = [];
    for (let i = 2; i + 2 < reply.length; i += 3) {
      const field = String(reply[i]);
      const entry = entryOf(field, String(reply[i + 1]), Number(reply[i + 2]));
      if (typeof entry === 'string') skipped.push({ id: shortened(field), reason: entry });
      else entries.push(entry);
    }
    const generation = generationOf(String(reply[1]));
    return { entries, skipped, ...(generation === undefined ? {} : { generation }) };
  }

  /**
   * Calls `changed` on each change published, once the subscription is first in place (a change
   * made before it would otherwise go unnoticed until the next periodic reading), and again each
   * time it is back after its connection was lost. Never throws; a subscription that cannot be
   * made only leaves the periodic reading.
   */
  watch(changed: () => void): void {
    if (this.closed) return;
    this.listeners.add(changed);
    if (this.subscription !== undefined) return;
    const notify = () => {
      for (const listener of this.listeners) {
        try {
          listener();
        } catch {
          // One watcher's failure must not stop the others, nor reach the client's events.
        }
      }
    };
    try {
      this.subscription = this.scripts.subscribe?.(this.channel, {
        message: notify,
        subscribed: notify,
      });
    } catch {
      // A client that cannot subscribe: the periodic reading stands in.
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    const subscription = this.subscription;
    this.subscription = undefined;
    await subscription?.close();
  }

  /**
   * Runs one operation of the script, on Redis's clock; where the server refuses `TIME` inside
   * scripts, on its clock read just before (see `overrides.lua`). Nothing is sent while the client
   * is not connected: it would wait in the client's queue.
   */
  private async run(op: string, ...args: string[]): Promise<unknown[]> {
    if (!this.scripts.ready()) throw new StoreNotConnectedError(this.scripts.library);
    let reply = (await this.scripts.run(OVERRIDES_SCRIPT, [this.key], [op, '', ...args])) as [
      number,
      ...unknown[],
    ];
    if (Number(reply[0]) === TIME_REFUSED) {
      const now = await this.serverTimeMs();
      reply = (await this.scripts.run(OVERRIDES_SCRIPT, [this.key], [op, now, ...args])) as [
        number,
        ...unknown[],
      ];
    }
    return reply;
  }

  /**
   * Redis's clock in ms, read outside a script: `TIME`, else `INFO server`'s `server_time_usec`.
   * Where both are refused this rejects: the overrides keep to one clock, never this machine's.
   */
  private async serverTimeMs(): Promise<string> {
    const reply = await this.scripts.command(['TIME']).catch(() => undefined);
    if (Array.isArray(reply)) {
      return String(Number(reply[0]) * 1000 + Math.floor(Number(reply[1]) / 1000));
    }
    const info = String(await this.scripts.command(['INFO', 'server']));
    const micros = /server_time_usec:(\d+)/.exec(info)?.[1];
    if (micros === undefined) throw new Error('Redis gave no time: TIME refused, INFO server too');
    return String(Math.floor(Number(micros) / 1000));
  }
}

const MAX_STRING = String(MAX_OVERRIDES);

/** The hash field of a policy and tracker: a JSON array, which no tracker string can break. */
function fieldOf(policy: string, tracker: string | undefined): string {
  return JSON.stringify(tracker === undefined ? [policy] : [policy, tracker]);
}

/** The generation `overrides.lua` keeps, `0 <epoch> <version>`; undefined when there is none. */
function generationOf(stored: string): OverrideGeneration | undefined {
  const match = /^0 (\d+) (\d+)$/.exec(stored);
  return match === null ? undefined : { epoch: match[1], version: Number(match[2]) };
}

/**
 * An override read back from its field, limit and time left; else why it is not one: its values
 * are checked by the registry, as those of any source.
 */
function entryOf(field: string, limitJson: string, leftMs: number): OverrideEntry | string {
  if (leftMs === UNREADABLE) return 'its value is not `<ends at> <limit>`';
  let key: unknown;
  let stored: Record<string, unknown>;
  try {
    key = JSON.parse(field);
  } catch {
    return 'its field is not JSON';
  }
  try {
    stored = JSON.parse(limitJson) as Record<string, unknown>;
  } catch {
    return 'its limit is not JSON';
  }
  if (
    !Array.isArray(key) ||
    typeof key[0] !== 'string' ||
    key.length > 2 ||
    (key.length === 2 && typeof key[1] !== 'string')
  ) {
    return 'its field is not ["<policy>"] or ["<policy>","<tracker>"]';
  }
  if (stored === null || typeof stored !== 'object' || typeof stored.threshold !== 'number') {
    return 'its limit has no numeric threshold';
  }
  const limit: { -readonly [K in keyof LimitOverride]: LimitOverride[K] } = {
    threshold: stored.threshold,
  };
  for (const name of ['periodMs', 'burst'] as const) {
    const value = stored[name];
    if (typeof value === 'number') limit[name] = value;
    else if (value !== undefined) return `its ${name} is not a number`;
  }
  return {
    policy: key[0] as string,
    ...(key.length === 2 ? { tracker: key[1] as string } : {}),
    limit,
    ...(leftMs >= 0 ? { expiresInMs: leftMs } : {}),
  };
}

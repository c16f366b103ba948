/**
 * The floor: the least a Redis sliding-window log can cost. Four calls in one script, sent with
 * EVALSHA, with the time and a unique member chosen by the client, and nothing else: no TIME
 * call, no retry-after, no hash tag, no policy handling. Any real limiter pays at least this.
 * There is one per client library, so each library's rows are measured against its own floor.
 */
import { Redis } from 'ioredis';
import {
  closeClient,
  connectNodeRedis,
  type Limit,
  type Limiter,
  neverDegraded,
} from './limiter.js';

export const FLOOR_SCRIPT = `
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local allowed = 0
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], now, ARGV[4])
  allowed = 1
end
redis.call('PEXPIRE', KEYS[1], window)
return allowed
`;

type FloorCommand = (
  key: string,
  now: number,
  window: number,
  limit: number,
  member: number,
) => Promise<number>;

/** On ioredis: a command defined from the script, which ioredis sends with EVALSHA. */
export async function floorLimiter(url: string, prefix: string, limit: Limit): Promise<Limiter> {
  const client = new Redis(url);
  client.defineCommand('benchFloorWindow', { numberOfKeys: 1, lua: FLOOR_SCRIPT });
  const command = (client as unknown as { benchFloorWindow: FloorCommand }).benchFloorWindow.bind(
    client,
  );
  await client.ping();
  // Unique per process, which is all one client needs: two requests never share a member.
  let member = 0;
  return {
    client,
    decide: async (key) =>
      (await command(`${prefix}:${key}`, Date.now(), limit.periodMs, limit.threshold, ++member)) ===
      1,
    redisKeyMarker: (key) => `${prefix}:${key}`,
    degraded: neverDegraded,
    close: () => closeClient(client),
  };
}

/**
 * On node-redis: the same script, loaded once and sent with `evalSha`. node-redis takes string
 * arguments only, so the time and member are converted per call (ioredis does it inside).
 */
export async function nodeRedisFloorLimiter(
  url: string,
  prefix: string,
  limit: Limit,
): Promise<Limiter> {
  const client = await connectNodeRedis(url);
  const sha = await client.scriptLoad(FLOOR_SCRIPT);
  const window = String(limit.periodMs);
  const threshold = String(limit.threshold);
  let member = 0;
  return {
    client,
    decide: async (key) =>
      (await client.evalSha(sha, {
        keys: [`${prefix}:${key}`],
        arguments: [String(Date.now()), window, threshold, String(++member)],
      })) === 1,
    redisKeyMarker: (key) => `${prefix}:${key}`,
    degraded: neverDegraded,
    close: () => closeClient(client),
  };
}

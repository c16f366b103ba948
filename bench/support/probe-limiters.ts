/**
 * The profile of a lone decision: probes that do a part of what a fixed-window decision does and
 * nothing else, so that the time Redis spends in each, side by side with rate-limiter-flexible's
 * script, shows where a decision's time goes. The least any script costs (an EVALSHA or an
 * FCALL that returns at once), then the fixed window's steps added back one at a time: its one
 * counter command, Redis's clock, the reply it answers, and the decision's id, kept in a key or
 * in the function library's memory.
 */
import { Redis } from 'ioredis';
import { closeClient, type Limiter, neverDegraded } from './limiter.js';

export type ProbeId =
  | 'eval-empty'
  | 'fcall-empty'
  | 'eval-incr'
  | 'fcall-incr'
  | 'eval-time-incr'
  | 'fcall-time-incr'
  | 'fcall-reply'
  | 'fcall-id-key'
  | 'fcall-id-kept';

export interface Probe {
  readonly id: ProbeId;
  readonly label: string;
  readonly start: (url: string) => Promise<Limiter>;
}

// One decision's reply as ours answers it: allowed, then the policy's allowed, remaining, retry
// and reset, the time and no lease.
const PROBE_LIBRARY = `#!lua name=benchprobe
local function counted(keys)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  return now, redis.call('INCRBY', keys[1], 1)
end
local function reply(now, count)
  return { 1, 1, 1000000 - count, 0, 60000, now }
end
-- As once.lua keeps lone replies: a flat array per quarter of a second, an index by sender.
local generation, generation_start, index = {}, 0, {}
redis.register_function('probe_empty', function() return 1 end)
redis.register_function('probe_incr', function(keys) return redis.call('INCRBY', keys[1], 1) end)
redis.register_function('probe_time_incr', function(keys)
  local _, count = counted(keys)
  return count
end)
redis.register_function('probe_reply', function(keys)
  return reply(counted(keys))
end)
redis.register_function('probe_id_key', function(keys)
  local now, count = counted(keys)
  local answer = reply(now, count)
  redis.call('SET', keys[2], cmsgpack.pack(answer), 'PX', 2000)
  return answer
end)
redis.register_function('probe_id_kept', function(keys, args)
  local now, count = counted(keys)
  if now - generation_start >= 250000 then
    generation, generation_start, index = {}, now, {}
  end
  local slot = #generation + 1
  index[tonumber(args[1])] = slot
  generation[slot], generation[slot + 1], generation[slot + 2] = 1000000 - count, 0, 60000
  generation[slot + 3], generation[slot + 4] = now, false
  return reply(now, count)
end)
`;

const EVAL_EMPTY = 'return 1';
const EVAL_INCR = "return redis.call('INCRBY', KEYS[1], 1)";
const EVAL_TIME_INCR = "redis.call('TIME') return redis.call('INCRBY', KEYS[1], 1)";

const FUNCTIONS: Record<Exclude<ProbeId, `eval-${string}`>, string> = {
  'fcall-empty': 'probe_empty',
  'fcall-incr': 'probe_incr',
  'fcall-time-incr': 'probe_time_incr',
  'fcall-reply': 'probe_reply',
  'fcall-id-key': 'probe_id_key',
  'fcall-id-kept': 'probe_id_kept',
};

export const PROBES: readonly Probe[] = [
  {
    id: 'eval-empty',
    label: 'probe: EVALSHA `return 1`',
    start: (url) => evalProbe(url, EVAL_EMPTY),
  },
  {
    id: 'fcall-empty',
    label: 'probe: FCALL `return 1`',
    start: (url) => fcallProbe(url, 'fcall-empty'),
  },
  { id: 'eval-incr', label: 'probe: EVALSHA INCRBY', start: (url) => evalProbe(url, EVAL_INCR) },
  { id: 'fcall-incr', label: 'probe: FCALL INCRBY', start: (url) => fcallProbe(url, 'fcall-incr') },
  {
    id: 'eval-time-incr',
    label: 'probe: EVALSHA TIME, INCRBY',
    start: (url) => evalProbe(url, EVAL_TIME_INCR),
  },
  {
    id: 'fcall-time-incr',
    label: 'probe: FCALL TIME, INCRBY',
    start: (url) => fcallProbe(url, 'fcall-time-incr'),
  },
  {
    id: 'fcall-reply',
    label: "probe: … and a decision's 6-entry reply",
    start: (url) => fcallProbe(url, 'fcall-reply'),
  },
  {
    id: 'fcall-id-key',
    label: '… and its id in a key (SET PX of the packed reply)',
    start: (url) => fcallProbe(url, 'fcall-id-key'),
  },
  {
    id: 'fcall-id-kept',
    label: "… or its id kept in the library's memory",
    start: (url) => fcallProbe(url, 'fcall-id-kept'),
  },
];

async function evalProbe(url: string, script: string): Promise<Limiter> {
  const client = new Redis(url);
  const sha = String(await client.script('LOAD', script));
  return probeLimiter(client, (key) => client.evalsha(sha, 1, key));
}

async function fcallProbe(url: string, id: keyof typeof FUNCTIONS): Promise<Limiter> {
  const client = new Redis(url);
  // Loaded once a run: replacing it would leave the garbage of the last one to the next probe.
  await client.call('FUNCTION', 'LOAD', PROBE_LIBRARY).catch((error: Error) => {
    if (!/already exists/.test(error.message)) throw error;
  });
  const name = FUNCTIONS[id];
  let sent = 0;
  return probeLimiter(client, (key) =>
    // The id key shares the key's hash tag, as ours does; the count is the id kept in memory.
    client.call('FCALL', name, 2, `{${key}}`, `{${key}}:id:${++sent}`, String(sent)),
  );
}

function probeLimiter(client: Redis, send: (key: string) => Promise<unknown>): Limiter {
  return {
    client,
    decide: async (key) => {
      await send(`probe:${key}`);
      return true;
    },
    redisKeyMarker: (key) => `probe:${key}`,
    degraded: neverDegraded,
    close: () => closeClient(client),
  };
}

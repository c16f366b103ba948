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

// The scripts EVALSHA runs, in their order in the profile: the same steps as the FCALL probes.
const EVAL_TIME = "redis.call('TIME') ";
const EVAL_INCR = "return redis.call('INCRBY', KEYS[1], 1)";

// Each probe: its id, its label, and what it runs: an EVALSHA script or a function of PROBE_LIBRARY.
const PROBE_TABLE: readonly (readonly [ProbeId, string, { script: string } | { fn: string }])[] = [
  ['eval-empty', 'probe: EVALSHA `return 1`', { script: 'return 1' }],
  ['fcall-empty', 'probe: FCALL `return 1`', { fn: 'probe_empty' }],
  ['eval-incr', 'probe: EVALSHA INCRBY', { script: EVAL_INCR }],
  ['fcall-incr', 'probe: FCALL INCRBY', { fn: 'probe_incr' }],
  ['eval-time-incr', 'probe: EVALSHA TIME, INCRBY', { script: EVAL_TIME + EVAL_INCR }],
  ['fcall-time-incr', 'probe: FCALL TIME, INCRBY', { fn: 'probe_time_incr' }],
  ['fcall-reply', "probe: … and a decision's 6-entry reply", { fn: 'probe_reply' }],
  ['fcall-id-key', '… and its id in a key (SET PX of the packed reply)', { fn: 'probe_id_key' }],
  ['fcall-id-kept', "… or its id kept in the library's memory", { fn: 'probe_id_kept' }],
];

export const PROBES: readonly Probe[] = PROBE_TABLE.map(([id, label, runs]) => ({
  id,
  label,
  start: (url: string) =>
    'script' in runs ? evalProbe(url, runs.script) : fcallProbe(url, runs.fn),
}));

// Every probe is sent the same keys and arguments as the last FCALL probes need: the counter, an id
// key that shares its hash tag (as ours does), and the id kept in memory; a step that does not use
// them still pays for receiving them, as the one that does.
function probeArgs(key: string, sent: number): string[] {
  return [`{${key}}`, `{${key}}:id:${sent}`, String(sent)];
}

async function evalProbe(url: string, script: string): Promise<Limiter> {
  const client = new Redis(url);
  const sha = String(await client.script('LOAD', script));
  let sent = 0;
  return probeLimiter(client, (key) => client.evalsha(sha, 2, ...probeArgs(key, ++sent)));
}

async function fcallProbe(url: string, fn: string): Promise<Limiter> {
  const client = new Redis(url);
  // Loaded once a run: replacing it would leave the garbage of the last one to the next probe.
  await client.call('FUNCTION', 'LOAD', PROBE_LIBRARY).catch((error: Error) => {
    if (!/already exists/.test(error.message)) throw error;
  });
  let sent = 0;
  return probeLimiter(client, (key) => client.call('FCALL', fn, 2, ...probeArgs(key, ++sent)));
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

-- The overrides in force for one key prefix: one hash, a field per policy and tracker (a JSON
-- array the caller encodes, so that any tracker is safe), each value `<ends at> <limit>`: when it
-- ends in ms of Redis's clock (0: until cleared), then the limit as JSON, which only the caller reads.
--
-- One more field, `#generation` (never a JSON array, so never an override's), holds
-- `0 <epoch> <version>`: the epoch is Redis's time in ms when the field was made, the version
-- counts the changes since. It stays when the last override is cleared, so that only a loss of the
-- data (a flush, an eviction, a restart without persistence, a failover that lost writes) shows an
-- instance another epoch, none, or a lower version. Its leading `0 ` makes an older version of this
-- script, which has no notion of it, take it for an override without end that it cannot read,
-- and leave it.
--
-- KEYS[1] the hash. ARGV[1] the operation, ARGV[2] the time in ms, or '' to read Redis TIME.
--   set:   ARGV[3] channel, ARGV[4] field, ARGV[5] limit, ARGV[6] ttl in ms or '', ARGV[7] horizon,
--          ARGV[8] how many overrides may be in force at most
--   clear: ARGV[3] channel, ARGV[4] field
--   list:  ARGV[3] horizon
-- The horizon (ms) is how long the hash lives at least while it holds an override without ttl.
-- Replies { -2 } when the server refused TIME and no time was given; else { now, ... }: set 1 when
-- stored, 0 when refused as one too many; clear how many fields it removed (0 or 1); list the
-- generation ('' when there is none), then each override in force as field, limit, ms left (-1:
-- until cleared; -2: a value this script cannot read, given whole as the limit). Ended overrides
-- are removed as they are listed.
--
-- No shebang: a server out of memory then refuses `set` at its HSET, before any write that
-- matters, but still runs `list` and `clear`, which only remove.

local key, op = KEYS[1], ARGV[1]
local GENERATION = '#generation'
local now = tonumber(ARGV[2])
if not now then
  local t = redis.pcall('TIME')
  if t.err then
    return { -2 }
  end
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The hash outlives each override in it: its TTL is only ever lengthened, to `life` ms.
local function keep(life)
  if life > 0 and redis.call('PTTL', key) < life then
    redis.call('PEXPIRE', key, life)
  end
end

-- One change more; a new epoch where the hash had no generation (new, or lost with the data).
local function changed()
  local epoch, version = string.match(redis.call('HGET', key, GENERATION) or '', '^0 (%d+) (%d+)$')
  if not epoch then
    epoch, version = string.format('%.0f', now), 0
  end
  redis.call('HSET', key, GENERATION, '0 ' .. epoch .. ' ' .. string.format('%.0f', tonumber(version) + 1))
end

-- Appends the overrides in force to `reply` as list replies them, removing those that ended;
-- returns how many, the longest time left, and whether one lasts until cleared.
local function inForce(reply)
  local all = redis.call('HGETALL', key)
  local ended, count, longest, lasting = {}, 0, 0, false
  for i = 1, #all, 2 do
    if all[i] ~= GENERATION then
      local ends, limit = string.match(all[i + 1], '^(%d+) (.*)$')
      ends = tonumber(ends)
      local left = -1
      if ends == nil then
        left, limit = -2, all[i + 1]
      elseif ends == 0 then
        lasting = true
      elseif ends > now then
        left = ends - now
        if left > longest then
          longest = left
        end
      end
      if ends ~= nil and ends > 0 and ends <= now then
        ended[#ended + 1] = all[i]
      else
        reply[#reply + 1] = all[i]
        reply[#reply + 1] = limit
        reply[#reply + 1] = left
        count = count + 1
      end
    end
  end
  -- In slices: unpack() is bounded by Lua's stack.
  for first = 1, #ended, 1000 do
    redis.call('HDEL', key, unpack(ended, first, math.min(first + 999, #ended)))
  end
  return count, longest, lasting
end

if op == 'set' then
  local field = ARGV[4]
  if redis.call('HEXISTS', key, field) == 0 then
    local count = redis.call('HLEN', key) - redis.call('HEXISTS', key, GENERATION)
    -- Only at the bound is it worth reading them all, for those that ended.
    if count >= tonumber(ARGV[8]) and inForce({}) >= tonumber(ARGV[8]) then
      return { now, 0 }
    end
  end
  local ttl = tonumber(ARGV[6])
  local ends = ttl and now + ttl or 0
  redis.call('HSET', key, field, string.format('%.0f', ends) .. ' ' .. ARGV[5])
  changed()
  keep(ttl or tonumber(ARGV[7]))
  redis.call('PUBLISH', ARGV[3], field)
  return { now, 1 }
end

if op == 'clear' then
  local removed = redis.call('HDEL', key, ARGV[4])
  if removed > 0 then
    changed()
    redis.call('PUBLISH', ARGV[3], ARGV[4])
  end
  return { now, removed }
end

-- list
local reply = { now, redis.call('HGET', key, GENERATION) or '' }
local count, longest, lasting = inForce(reply)
if count > 0 then
  keep(lasting and math.max(longest, tonumber(ARGV[3])) or longest)
end
return reply

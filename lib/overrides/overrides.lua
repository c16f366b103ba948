-- The overrides in force for one key prefix: one hash, a field per policy and tracker (a JSON
-- array the caller encodes, so that any tracker is safe), each value `<ends at> <limit>`: when it
-- ends in ms of Redis's clock (0: until cleared), then the limit as JSON, which only the caller reads.
--
-- KEYS[1] the hash. ARGV[1] the operation, ARGV[2] the time in ms, or '' to read Redis TIME.
--   set:   ARGV[3] channel, ARGV[4] field, ARGV[5] limit, ARGV[6] ttl in ms or '', ARGV[7] horizon
--   clear: ARGV[3] channel, ARGV[4] field
--   list:  ARGV[3] horizon
-- The horizon (ms) is how long the hash lives at least while it holds an override without ttl.
-- Replies { -2 } when the server refused TIME and no time was given; else { now, ... }: set adds
-- nothing, clear how many fields it removed (0 or 1), list each override in force as
-- field, limit, ms left (-1: until cleared). Ended overrides are removed as they are listed.
--
-- No shebang: a server out of memory then refuses `set` at its HSET, before any write, but still
-- runs `list` and `clear`, which only remove.

local key, op = KEYS[1], ARGV[1]
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
  if redis.call('PTTL', key) < life then
    redis.call('PEXPIRE', key, life)
  end
end

if op == 'set' then
  local ttl = tonumber(ARGV[6])
  local ends = ttl and now + ttl or 0
  redis.call('HSET', key, ARGV[4], string.format('%.0f', ends) .. ' ' .. ARGV[5])
  keep(ttl or tonumber(ARGV[7]))
  redis.call('PUBLISH', ARGV[3], ARGV[4])
  return { now }
end

if op == 'clear' then
  local removed = redis.call('HDEL', key, ARGV[4])
  if removed > 0 then
    redis.call('PUBLISH', ARGV[3], ARGV[4])
  end
  return { now, removed }
end

-- list
local all = redis.call('HGETALL', key)
local reply, ended, longest, lasting = { now }, {}, 0, false
for i = 1, #all, 2 do
  local ends, limit = string.match(all[i + 1], '^(%d+) (.*)$')
  ends = tonumber(ends)
  if ends == nil or (ends > 0 and ends <= now) then
    ended[#ended + 1] = all[i]
  else
    local left = -1
    if ends == 0 then
      lasting = true
    else
      left = ends - now
      if left > longest then
        longest = left
      end
    end
    reply[#reply + 1] = all[i]
    reply[#reply + 1] = limit
    reply[#reply + 1] = left
  end
end
-- In slices: unpack() is bounded by Lua's stack.
for first = 1, #ended, 1000 do
  redis.call('HDEL', key, unpack(ended, first, math.min(first + 999, #ended)))
end
if #reply > 1 then
  keep(lasting and math.max(longest, tonumber(ARGV[3])) or longest)
end
return reply

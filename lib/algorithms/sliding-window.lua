-- Sliding-window log: one sorted set per key, one entry per allowed request.
-- Scores are arrival times in microseconds; members are unique integers, so two requests
-- can never collapse into one entry.
--
-- KEYS[1]  the log
-- ARGV[1]  window length, microseconds
-- ARGV[2]  threshold: requests allowed in any window
-- ARGV[3]  cost: requests this call asks for (1 <= cost)
-- ARGV[4]  now in microseconds; empty in production, where Redis TIME is the one clock
--          shared by every app instance
--
-- Reply: { allowed (1|0), remaining, retry_after_ms (-1: never), reset_after_ms }

local key = KEYS[1]
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local now = tonumber(ARGV[4])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- Trim before counting: only arrivals in (now - window, now] are in the window.
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)

if count + cost <= limit then
  -- Only allowed requests are recorded, so a client that keeps retrying cannot lock itself out.
  local member = now
  for _ = 1, cost do
    while redis.call('ZADD', key, 'NX', now, member) == 0 do
      member = member + 1
    end
    member = member + 1
  end
  local window_ms = math.ceil(window / 1000)
  -- The newest entry leaves the window after exactly one window, and so does the key.
  redis.call('PEXPIRE', key, window_ms)
  return { 1, limit - count - cost, 0, window_ms }
end

local retry = -1
if cost <= limit then
  -- The request fits once the (count + cost - limit) oldest entries have left the window.
  local index = count + cost - limit - 1
  local blocker = redis.call('ZRANGE', key, index, index, 'WITHSCORES')
  retry = math.ceil((tonumber(blocker[2]) + window - now) / 1000)
end
local reset = 0
local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
if newest[2] then
  reset = math.ceil((tonumber(newest[2]) + window - now) / 1000)
end
return { 0, math.max(limit - count, 0), retry, reset }

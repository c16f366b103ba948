-- Sliding-window counter: two clock-aligned windows, the previous one weighted by how much of it
-- the sliding window still covers: used = previous * (period - elapsed) / period + current.
-- O(1) memory (one small hash). Approximate: it assumes the previous window's requests were
-- spread evenly, so a span of one period can hold somewhat more than `limit` when they were not.

ALGORITHMS.swc = {}

local function swc_start(now, p)
  return now - math.fmod(now, p.period)
end

-- This window's count and the previous one's; or, when the key is not a hash, only what stands
-- there (see stand_in).
function ALGORITHMS.swc.open(key, now, p)
  local start = swc_start(now, p)
  local stored = redis.pcall('HMGET', key, 'w', 'c', 'p')
  if stored.err then
    return stand_in(key)
  end
  local window, count = tonumber(stored[1]), tonumber(stored[2]) or 0
  if window == start then
    return nil, count, tonumber(stored[3]) or 0
  elseif window == start - p.period then
    return nil, 0, count
  end
  return nil, 0, 0
end

local function swc_weighted(now, p, start, previous)
  return previous * (p.period - (now - start)) / p.period
end

function ALGORITHMS.swc.check(_, now, p, current, previous)
  if p.cost > p.limit then
    return 0, NEVER
  end
  local start = swc_start(now, p)
  local weighted = swc_weighted(now, p, start, previous)
  if weighted + current + p.cost <= p.limit then
    return 1, 0
  end
  local retry_at
  if current + p.cost <= p.limit then
    -- Later in this window, once the previous window's weight has decayed enough.
    retry_at = start + p.period - (p.limit - current - p.cost) * p.period / previous
  else
    -- In the next window, once this window's count (then the previous) has decayed enough.
    retry_at = start + p.period + math.max(0, p.period - (p.limit - p.cost) * p.period / current)
  end
  return 0, math.max(1, us(retry_at - now))
end

function ALGORITHMS.swc.after(now, p, current, previous)
  local start = swc_start(now, p)
  local weighted = swc_weighted(now, p, start, previous)
  return math.floor(p.limit - weighted - current - p.cost), ms(start + 2 * p.period - now)
end

local function swc_write(key, now, p, slack, current, previous)
  local start = swc_start(now, p)
  redis.call('HSET', key, 'w', start, 'c', current, 'p', previous)
  -- This window's count matters until the end of the next one, where it is the previous.
  redis.call('PEXPIRE', key, ms(start + 2 * p.period - now) + slack)
end

function ALGORITHMS.swc.commit(key, now, p, slack, current, previous)
  swc_write(key, now, p, slack, current + p.cost, previous)
  return ALGORITHMS.swc.after(now, p, current, previous)
end

-- Gives `cost` back to the current window, never below zero; when `at` is given, to the window
-- the request arrived in, if it still counts.
function ALGORITHMS.swc.refund(key, now, p, slack, current, previous, at)
  local start = swc_start(now, p)
  if at and at < start - p.period then
    return
  end
  if at and at < start then
    previous = math.max(previous - p.cost, 0)
  else
    current = math.max(current - p.cost, 0)
  end
  if current == 0 and previous == 0 then
    redis.call('DEL', key)
  else
    swc_write(key, now, p, slack, current, previous)
  end
end

-- Records `cost` more units without checking the limit (a reservation's usage beyond its
-- estimate, already spent), in the window the reservation was counted in: the current one or the
-- previous; an older one no longer counts, and is left alone.
function ALGORITHMS.swc.charge(key, now, p, slack, current, previous, at)
  local start = swc_start(now, p)
  if at and at < start - p.period then
    return
  end
  if at and at < start then
    previous = previous + p.cost
  else
    current = current + p.cost
  end
  swc_write(key, now, p, slack, current, previous)
end

function ALGORITHMS.swc.status(key, now, p, current, previous)
  local start = swc_start(now, p)
  local weighted = swc_weighted(now, p, start, previous)
  local reset = 0
  if current > 0 then
    reset = ms(start + 2 * p.period - now)
  elseif previous > 0 then
    reset = ms(start + p.period - now)
  end
  return math.max(0, math.floor(p.limit - weighted - current)), reset
end

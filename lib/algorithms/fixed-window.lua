-- Fixed window: windows aligned to the clock (multiples of the period since the epoch), one
-- counter per window, kept until the window ends. O(1) memory and the cheapest check, but only
-- exact per window: a client can pass `limit` at the end of one window and `limit` more at the
-- start of the next, up to 2 x limit within one period across a boundary.

ALGORITHMS.fw = {}

-- math.fmod, not %, which Lua 5.1 defines through floor(a / b) and so rounds for large times.
local function fw_window(key, now, p)
  local start = now - math.fmod(now, p.period)
  return start, key .. ':' .. string.format('%.0f', start / p.period)
end

function ALGORITHMS.fw.check(key, now, p)
  local start, counter = fw_window(key, now, p)
  local count = tonumber(redis.call('GET', counter)) or 0
  if p.cost > p.limit then
    return 0, -1, count, start
  end
  if count + p.cost <= p.limit then
    return 1, 0, count, start
  end
  return 0, ms(start + p.period - now), count, start
end

function ALGORITHMS.fw.commit(key, now, p, slack, count, start)
  local _, counter = fw_window(key, now, p)
  redis.call('INCRBY', counter, p.cost)
  redis.call('PEXPIRE', counter, ms(start + p.period - now) + slack)
  return p.limit - count - p.cost, ms(start + p.period - now)
end

function ALGORITHMS.fw.status(key, now, p, count, start)
  if count == 0 then
    return p.limit, 0
  end
  return math.max(p.limit - count, 0), ms(start + p.period - now)
end

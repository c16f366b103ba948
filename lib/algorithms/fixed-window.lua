-- Fixed window: windows aligned to the clock (multiples of the period since the epoch), or to the
-- calendar (see window_of), one count per key, kept until the window ends. O(1) memory and the
-- cheapest check, but only exact per window: a client can pass `limit` at the end of one window
-- and `limit` more at the start of the next, up to 2 x limit within one period across a boundary.
-- State: one integer, (window number mod 2^22) * 2^30 + count, which Redis stores in the key
-- itself with no string to allocate. The window number travels with the count so a count from an
-- earlier window is never read as this one's, whichever clock is in use: a key lives only to the
-- end of its window, far less than 2^22 windows. Counts stay below 2^30 (thresholds are at most
-- 10^9), and the whole stays below 2^53, exact in Lua's doubles.
-- A calendar window's number is its start in whole seconds, mod 2^22 (some 48.5 days): a key
-- lives to its window's end (plus the slack of a simulated clock, minutes), and a window lasts at
-- most 31 days and 2 hours, so any window read while the key lives starts less than 48.5 days from
-- the one that wrote it; and starts are whole ms at least 22 hours apart, so no two windows share
-- a second: no two numbers collide.

ALGORITHMS.fw = {}

local FW_WINDOWS, FW_COUNTS = 4194304, 1073741824

-- The current window's number. math.fmod, not %, which Lua 5.1 defines through floor(a / b) and
-- so rounds for large times.
local function fw_window(now, p)
  local _, start = window_of(now, p)
  if p.bounds then
    return math.fmod(math.floor(start / 1000000), FW_WINDOWS)
  end
  return math.fmod(start / p.period, FW_WINDOWS)
end

-- The current window's count and number; or, when the key holds a lock-out, only its end.
function ALGORITHMS.fw.open(key, now, p)
  local window = fw_window(now, p)
  local stored = tonumber(redis.call('GET', key))
  if stored and stored < 0 then
    return -stored
  end
  if stored and math.floor(stored / FW_COUNTS) == window then
    return nil, math.fmod(stored, FW_COUNTS), window
  end
  return nil, 0, window
end

-- µs from now (as window_of counts it) to the end of the current window.
local function fw_left(now, p)
  local at, _, stop = window_of(now, p)
  return stop - at
end

function ALGORITHMS.fw.check(_, now, p, count)
  if p.cost > p.limit then
    return 0, NEVER
  end
  if count + p.cost <= p.limit then
    return 1, 0
  end
  return 0, fw_left(now, p)
end

function ALGORITHMS.fw.after(now, p, count)
  return p.limit - count - p.cost, ms(fw_left(now, p))
end

function ALGORITHMS.fw.commit(key, now, p, slack, count, window)
  local remaining, reset = ALGORITHMS.fw.after(now, p, count)
  redis.call('SET', key, window * FW_COUNTS + count + p.cost, 'PX', reset + slack)
  return remaining, reset
end

-- Gives `cost` back to the current window (when `at` is given, only if the request arrived in
-- it: an earlier window's count no longer matters); a window emptied this way is forgotten.
function ALGORITHMS.fw.refund(key, now, p, slack, count, window, at)
  local _, start = window_of(now, p)
  if at and at < start then
    return
  end
  local left = math.max(count - p.cost, 0)
  if left == 0 then
    redis.call('DEL', key)
  else
    redis.call('SET', key, window * FW_COUNTS + left, 'PX', ms(fw_left(now, p)) + slack)
  end
end

-- Records `cost` more units without checking the limit (a reservation's usage beyond its
-- estimate, already spent), in the window the reservation was counted in: the current one, or
-- none when that window has passed. The count is capped just below 2^30, where it would spill
-- into the window number; any count past the limit rejects alike, so the cap changes no answer.
function ALGORITHMS.fw.charge(key, now, p, slack, count, window, at)
  local _, start = window_of(now, p)
  if at and at < start then
    return
  end
  local charged = math.min(count + p.cost, FW_COUNTS - 1)
  redis.call('SET', key, window * FW_COUNTS + charged, 'PX', ms(fw_left(now, p)) + slack)
end

function ALGORITHMS.fw.status(key, now, p, count)
  if count == 0 then
    return p.limit, 0
  end
  return math.max(p.limit - count, 0), ms(fw_left(now, p))
end

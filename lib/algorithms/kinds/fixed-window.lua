-- Fixed window: windows aligned to the clock (multiples of the period since the epoch), or to the
-- calendar (see window_of), one count per key, kept until the window ends. O(1) memory and the
-- cheapest check, but only exact per window: a client can pass `limit` at the end of one window
-- and `limit` more at the start of the next, up to 2 x limit within one period across a boundary.
-- State: one integer, mark * 2^30 + count, which Redis stores in the key itself with no string to
-- allocate. The mark travels with the count so a count from an earlier window is never read as
-- this one's, whichever clock is in use. Counts stay below 2^30 (thresholds are at most 10^9),
-- and the whole stays below 2^53, exact in Lua's doubles.
-- Windows of a period: the mark is the window's number mod 2^22; a key lives only to the end of
-- its window, far less than 2^22 windows, so the count is this window's when the numbers match.
-- Windows by the calendar: the mark is when the count was last written, in whole seconds, moved
-- up into its window where that second began before it (so the mark is a second of the window
-- itself), mod 2^23 (some 97 days). A count stands for units spent no later than its mark, so:
--   A COUNT COUNTS IN THE CURRENT WINDOW WHEN IT WAS LAST WRITTEN AT OR AFTER THAT WINDOW'S
--   START; one written before it belongs to windows that have ended.
-- With one anchor this is the window's own count and nothing else: a count written in an earlier
-- window has its mark before this one's start (starts are whole ms at least a second apart, so no
-- two windows share a mark). When the windows change (a customer's anchor or time zone moves),
-- the count of the old window counts whole in the new current window if it was written since that
-- window began (some of it may have been spent there, and one count cannot tell how much), and not
-- at all if it was written before: a move alone never hands out a fresh quota, and what was
-- spent stops counting once a window starts after it was last counted (to the second: a count
-- written in the very second another anchor's window began, after it began, may read as written
-- before it). The next write stamps the count with its own mark, in the current window. So that the count is there wherever it counts,
-- a calendar key lives as long as a window that began by its mark can last: the unit's longest
-- window (p.bounds[7], after the six starts) and a second (a mark may be up to a second past now),
-- past its end if need be. A mark is read back as the one in the 2^23 seconds up to a day after
-- now (clocks that step back a little), so such a key (plus the minutes of slack a simulated clock
-- adds) is never misread.
-- (A calendar key written before marks held its window's start in seconds mod 2^22: read as a
-- mark, it is that start, or one 2^22 seconds before, which finds the window's count empty once.)

ALGORITHMS.fw = {}

local FW_WINDOWS, FW_MARKS, FW_COUNTS = 4194304, 8388608, 1073741824
local FW_MARK_AHEAD = 86400

-- The mark a write now stores: the window's number, or for the calendar the second written at, no
-- earlier than the window's first whole second. math.fmod, not %, which Lua 5.1 defines through
-- floor(a / b) and so rounds for large times.
local function fw_mark(now, p)
  local at, start = window_of(now, p)
  if p.bounds then
    local second = math.max(math.floor(at / 1000000), math.ceil(start / 1000000))
    return math.fmod(second, FW_MARKS)
  end
  return math.fmod(start / p.period, FW_WINDOWS)
end

-- Whether a count stored under `stored` counts in the current window, whose mark is `mark`.
local function fw_counts(stored, mark, now, p)
  if not p.bounds then
    return stored == mark
  end
  local at, start = window_of(now, p)
  local latest = math.floor(at / 1000000) + FW_MARK_AHEAD
  local written = latest - math.fmod(latest - stored, FW_MARKS)
  return written * 1000000 >= start
end

-- The current window's count and mark; or, when the key holds a lock-out, only its end.
function ALGORITHMS.fw.open(key, now, p)
  local mark = fw_mark(now, p)
  local stored = tonumber(redis.call('GET', key))
  if stored and stored < 0 then
    return -stored
  end
  if stored and fw_counts(math.floor(stored / FW_COUNTS), mark, now, p) then
    return nil, math.fmod(stored, FW_COUNTS), mark
  end
  return nil, 0, mark
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

-- ms the key lives after a write now: to the window's end; for the calendar, see above.
local function fw_lives(now, p)
  if p.bounds then
    return ms(p.bounds[7]) + 1000
  end
  return ms(fw_left(now, p))
end

function ALGORITHMS.fw.commit(key, now, p, slack, count, mark)
  local remaining, reset = ALGORITHMS.fw.after(now, p, count)
  redis.call('SET', key, mark * FW_COUNTS + count + p.cost, 'PX', fw_lives(now, p) + slack)
  return remaining, reset
end

-- Gives `cost` back to the current window (when `at` is given, only if the request arrived in
-- it: an earlier window's count no longer matters); a window emptied this way is forgotten.
function ALGORITHMS.fw.refund(key, now, p, slack, count, mark, at)
  local _, start = window_of(now, p)
  if at and at < start then
    return
  end
  local left = math.max(count - p.cost, 0)
  if left == 0 then
    redis.call('DEL', key)
  else
    redis.call('SET', key, mark * FW_COUNTS + left, 'PX', fw_lives(now, p) + slack)
  end
end

-- Records `cost` more units without checking the limit (a reservation's usage beyond its
-- estimate, already spent), in the window the reservation was counted in: the current one, or
-- none when that window has passed. The count is capped just below 2^30, where it would spill
-- into the mark; any count past the limit rejects alike, so the cap changes no answer.
function ALGORITHMS.fw.charge(key, now, p, slack, count, mark, at)
  local _, start = window_of(now, p)
  if at and at < start then
    return
  end
  local charged = math.min(count + p.cost, FW_COUNTS - 1)
  redis.call('SET', key, mark * FW_COUNTS + charged, 'PX', fw_lives(now, p) + slack)
end

-- The usual consume, of windows of the period with no lock-out, in one command where it can be:
-- INCRBY adds the cost to the packed count in place, keeping the TTL the window's first write set,
-- and the value before it tells whether the count was this window's. One from an earlier window,
-- or none (0: a count is never stored as 0), is replaced, with the TTL; a cost that does not fit
-- is taken back. Answers allowed, remaining, retry and reset as decide's steps would; nothing when
-- the key holds something else (a lock-out's negative integer, put back at once, or another type),
-- for decide's steps to answer.
function ALGORITHMS.fw.consume(key, now, p, slack)
  local cost = p.cost
  if p.bounds or p.block > 0 or cost > p.limit then
    return nil
  end
  local raised = redis.pcall('INCRBY', key, cost)
  if type(raised) ~= 'number' then
    return nil
  end
  local stored = raised - cost
  if stored < 0 then
    redis.call('DECRBY', key, cost)
    return nil
  end
  local period = p.period
  local start = now - math.fmod(now, period)
  local mark = math.fmod(start / period, FW_WINDOWS)
  local left = start + period - now
  if stored == 0 or math.floor(stored / FW_COUNTS) ~= mark then
    redis.call('SET', key, mark * FW_COUNTS + cost, 'PX', ms(left) + slack)
    return 1, p.limit - cost, 0, ms(left)
  end
  local count = math.fmod(stored, FW_COUNTS)
  if count + cost <= p.limit then
    return 1, p.limit - count - cost, 0, ms(left)
  end
  redis.call('DECRBY', key, cost)
  return 0, math.max(p.limit - count, 0), left, ms(left)
end

function ALGORITHMS.fw.status(key, now, p, count)
  if count == 0 then
    return p.limit, 0
  end
  return math.max(p.limit - count, 0), ms(fw_left(now, p))
end

-- Sliding-window counter: two windows aligned to the clock (or to the calendar, see window_of), the
-- previous one weighted by the share of the current one still ahead, which is how much of the
-- previous the sliding window still covers when both are as long: used = previous * (end - now) /
-- (end - start) + current. O(1) memory (one short string). Approximate: it assumes the previous
-- window's requests were spread evenly, so a span of one period can hold somewhat more than
-- `limit` when they were not.
-- Each function reads the window with window_of, whose first value, the moment to count at, stands
-- in for `now` (they differ only when a calendar policy's bounds do not cover now).
-- State: doubles packed in one string, which Redis keeps in the key itself, read by one GET and
-- written by one SET with its TTL: w = the start of the window written in (µs), c = its count, p =
-- the count of the window before it (struct '<ddd', 24 bytes); and for a calendar policy t, when it
-- was last written (µs; '<dddd', 32 bytes), since windows by the calendar can change under a key (a
-- customer's anchor or time zone moves). A key written before held the same in a
-- hash { w, c, p, t }, read as such until rewritten. The
-- rule of fixed-window.lua holds for both counts: each counts in the latest of this window and
-- the previous one that began at or before the last moment its units can have been spent (t for
-- c, just before w for p), and nowhere if neither did. With one anchor that is c in its own window
-- and p in the one before; after a move, an old count is never dropped while it may hold units of
-- the new windows, and never counted past them. A calendar key lives twice the unit's longest
-- window (p.bounds[7]) after a write: c may count in a window that began at t, then in the next.

ALGORITHMS.swc = {}

-- Adds `units`, spent no later than `last`, to the window of now they count in.
local function swc_place(units, last, start, before, current, previous)
  if last >= start then
    return current + units, previous
  elseif last >= before then
    return current, previous + units
  end
  return current, previous
end

local SWC_PERIOD, SWC_CALENDAR = '<ddd', '<dddd'

-- The stored w, c, p and t (see above; t nil for windows of the period).
local SWC_DECODERS = {
  [24] = function(stored)
    local window, count, previous = struct.unpack(SWC_PERIOD, stored)
    return window, count, previous
  end,
  [32] = function(stored)
    local window, count, previous, last = struct.unpack(SWC_CALENDAR, stored)
    return window, count, previous, last
  end,
}
local SWC_FIELDS = { 'w', 'c', 'p', 't' }

-- This window's count and the previous one's; or, when the key holds something else, only what
-- stands there (see stand_in).
function ALGORITHMS.swc.open(key, now, p)
  local _, start, _, before = window_of(now, p)
  local stand, window, count, stored_previous, last = read_packed(key, SWC_DECODERS, SWC_FIELDS)
  if stand then
    return stand
  end
  count = count or 0
  if p.bounds and window and last then
    local current, previous = swc_place(count, last, start, before, 0, 0)
    return nil, swc_place(stored_previous or 0, window - 1, start, before, current, previous)
  end
  if window == start then
    return nil, count, stored_previous or 0
  elseif window == before then
    return nil, 0, count
  end
  return nil, 0, 0
end

local function swc_weighted(now, start, stop, previous)
  return previous * (stop - now) / (stop - start)
end

function ALGORITHMS.swc.check(_, now, p, current, previous)
  if p.cost > p.limit then
    return 0, NEVER
  end
  local at, start, stop, _, after = window_of(now, p)
  local weighted = swc_weighted(at, start, stop, previous)
  if weighted + current + p.cost <= p.limit then
    return 1, 0
  end
  local retry_at
  if current + p.cost <= p.limit then
    -- Later in this window, once the previous window's weight has decayed enough.
    retry_at = stop - (p.limit - current - p.cost) * (stop - start) / previous
  else
    -- In the next window, once this window's count (then the previous) has decayed enough.
    retry_at = stop + math.max(0, (after - stop) - (p.limit - p.cost) * (after - stop) / current)
  end
  return 0, math.max(1, us(retry_at - at))
end

function ALGORITHMS.swc.after(now, p, current, previous)
  local at, start, stop, _, after = window_of(now, p)
  local weighted = swc_weighted(at, start, stop, previous)
  return math.floor(p.limit - weighted - current - p.cost), ms(after - at)
end

local function swc_write(key, now, p, slack, current, previous)
  local at, start, _, _, after = window_of(now, p)
  local state = p.bounds and struct.pack(SWC_CALENDAR, start, current, previous, at)
    or struct.pack(SWC_PERIOD, start, current, previous)
  -- This window's count matters until the end of the next one, where it is the previous.
  redis.call('SET', key, state, 'PX', (p.bounds and ms(2 * p.bounds[7]) or ms(after - at)) + slack)
end

function ALGORITHMS.swc.commit(key, now, p, slack, current, previous)
  swc_write(key, now, p, slack, current + p.cost, previous)
  return ALGORITHMS.swc.after(now, p, current, previous)
end

-- Gives `cost` back to the current window, never below zero; when `at` is given, to the window
-- the request arrived in, if it still counts.
function ALGORITHMS.swc.refund(key, now, p, slack, current, previous, at)
  local _, start, _, before = window_of(now, p)
  if at and at < before then
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
  local _, start, _, before = window_of(now, p)
  if at and at < before then
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
  local at, start, stop, _, after = window_of(now, p)
  local weighted = swc_weighted(at, start, stop, previous)
  local reset = 0
  if current > 0 then
    reset = ms(after - at)
  elseif previous > 0 then
    reset = ms(stop - at)
  end
  return math.max(0, math.floor(p.limit - weighted - current)), reset
end

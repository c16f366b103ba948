-- Sliding-window log: one sorted set per key, one entry per allowed decision, scored by its
-- arrival time (µs) and weighted by its cost (see zset_open). An entry is named by its mark, the
-- running count of units the key has recorded up to and including it, then ":<units>" unless it
-- carries one: "7" after seven requests of cost 1, then "1000007:1000000" after one of a million.
-- Marks rise with arrival, so the entry whose leaving lets a request fit is found by bisection.
-- Exact: no span of one period ever holds more than `limit`. A decision's work is O(log² N) for N
-- entries, whatever its cost; memory is one entry per decision in the window. In a plain set (see
-- zset_open) marks are consecutive, so ranks count units and no bisection is needed.

ALGORITHMS.sw = {}

local function sw_mark(member)
  return tonumber(string.match(member, '^%d+'))
end

-- An entry's name: its mark, then its units, which a plain log leaves out (all are one). Every
-- entry written to a weighted log carries them, so its newest entry tells its layout.
local function sw_member(mark, units, weighted)
  if weighted then
    return string.format('%d:%d', mark, units)
  end
  return string.format('%d', mark)
end

-- Opens the log, dropping the entries scored up to `upto`: nil, the units left, then the newest
-- entry of a plain log ({ name, score }; nil when empty) or true for a weighted one; or only what
-- stands in the key when it is not a set (see zset_open). A plain log is read once, at its newest
-- entry, which the commit then needs, and trimmed blind.
local function sw_open(key, upto)
  local newest = redis.pcall('ZRANGE', key, -1, -1, 'WITHSCORES')
  if newest.err or (newest[1] and string.find(newest[1], ':', 1, true)) then
    local stand_in, total = zset_open(key, upto)
    if stand_in then
      return stand_in
    end
    return nil, total, total > 0 or nil
  end
  if not newest[1] then
    return nil, 0, nil
  end
  if tonumber(newest[2]) <= upto then
    redis.call('DEL', key)
    return nil, 0, nil
  end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', upto)
  return nil, redis.call('ZCARD', key), newest
end

-- After a refund from a weighted log: records its units, and names its newest entry as a weighted
-- one, which an entry from its plain days is not.
local function sw_weigh(key, total)
  if set_total(key, total) > 0 then
    local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    if not string.find(newest[1], ':', 1, true) then
      redis.call('ZREM', key, newest[1])
      redis.call('ZADD', key, newest[2], newest[1] .. ':1')
    end
  end
end

-- The arrival time of the oldest entry whose leaving leaves at most `room` units: those recorded
-- after it, by their marks. A refund that removed units from the middle of the log leaves their
-- marks in place, so the count by marks may include units that are gone: the wait may then be
-- longer than needed, never shorter.
local function sw_blocker(key, room)
  local last = redis.call('ZCARD', key) - 1 -- rank 0 is the total
  local floor = sw_mark(redis.call('ZRANGE', key, last, last)[1]) - room
  local lo, hi = 1, last
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if sw_mark(redis.call('ZRANGE', key, mid, mid)[1]) >= floor then
      hi = mid
    else
      lo = mid + 1
    end
  end
  return tonumber(redis.call('ZRANGE', key, lo, lo, 'WITHSCORES')[2])
end

-- The units in the window and the newest entry (see sw_open).
function ALGORITHMS.sw.open(key, now, p)
  -- Trim before counting: only arrivals in (now - period, now] are in the window.
  return sw_open(key, now - p.period)
end

function ALGORITHMS.sw.check(key, now, p, count, newest)
  if p.cost > p.limit then
    return 0, NEVER
  end
  if count + p.cost <= p.limit then
    return 1, 0
  end
  local blocker
  if newest == true then
    blocker = sw_blocker(key, p.limit - p.cost)
  else
    -- One unit per entry: the request fits once the (count + cost - limit) oldest have left.
    local index = count + p.cost - p.limit - 1
    blocker = tonumber(redis.call('ZRANGE', key, index, index, 'WITHSCORES')[2])
  end
  return 0, blocker + p.period - now
end

function ALGORITHMS.sw.after(_, p, count)
  return p.limit - count - p.cost, ms(p.period)
end

-- `newest` is what the check found: true for a weighted log, else the newest entry of a plain one.
function ALGORITHMS.sw.commit(key, now, p, slack, count, newest)
  local at = now
  if p.cost > 0 then
    local mark, units, weighted = p.cost, p.cost, newest == true
    if count > 0 then
      if weighted then
        newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
      end
      mark = sw_mark(newest[1]) + p.cost
      -- A request in the newest entry's microsecond joins it, so arrival times stay unique and
      -- in order; so does one after the clock stepped back, which then leaves a little later.
      if tonumber(newest[2]) >= now then
        at, units = tonumber(newest[2]), units_of(newest[1]) + p.cost
        redis.call('ZREM', key, newest[1])
      end
    end
    if weighted or units > 1 then
      redis.call('ZADD', key, at, sw_member(mark, units, true), -(count + p.cost), TOTAL)
    else
      redis.call('ZADD', key, at, sw_member(mark, 1, false))
    end
  end
  -- The newest entry leaves the window after one period, and so does the key.
  redis.call('PEXPIRE', key, ms(at + p.period - now) + slack)
  return ALGORITHMS.sw.after(now, p, count)
end

-- Takes up to `wanted` units off the entry `member` (scored `at`); returns how many it took. The
-- newest entry gives back its last units, so marks stay consecutive; an older one keeps its mark.
local function sw_take(key, member, at, wanted, newest)
  local units = units_of(member)
  redis.call('ZREM', key, member)
  if units <= wanted then
    return units
  end
  local mark = sw_mark(member)
  if newest then
    mark = mark - wanted
  end
  redis.call('ZADD', key, at, sw_member(mark, units - wanted, true))
  return wanted
end

-- Forgets the `cost` most recent units, or those of the requests that arrived at `at`. The key's
-- TTL still covers what is left.
function ALGORITHMS.sw.refund(key, _, p, _, total, newest, at)
  local weighted = newest == true
  if total == 0 then
    return
  end
  if at then
    local found = redis.call('ZRANGEBYSCORE', key, at, at)
    if #found == 0 then
      return
    end
    local last = redis.call('ZRANGE', key, -1, -1)[1] == found[1]
    total = total - sw_take(key, found[1], at, p.cost, last)
    -- An entry gone from the middle leaves a gap in the marks, which ranks would not count.
    if not weighted and last then
      return
    end
  elseif not weighted then
    -- The newest units are the last entries: the marks left stay consecutive.
    redis.call('ZPOPMAX', key, p.cost)
    return
  else
    local left = p.cost
    -- Each turn but the last removes an entry: no more turns than entries ever recorded.
    while left > 0 and total > 0 do
      local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
      local taken = sw_take(key, newest[1], tonumber(newest[2]), left, true)
      left, total = left - taken, total - taken
    end
  end
  sw_weigh(key, total)
end

-- Records `cost` more units without checking the limit (a reservation's usage beyond its
-- estimate, already spent), while the reservation's entry, scored `at`, is in the log: once it
-- has left the window (or was given back), its usage no longer counts either. The units join the
-- newest entry, whose mark rises by them, so arrival times and marks stay in order and
-- sw_blocker's bisection stays exact; they leave the window with it, no sooner than the
-- reservation's own would. With no `at`, an empty log gets an entry now, as a commit would.
function ALGORITHMS.sw.charge(key, now, p, slack, count, newest, at)
  if at and redis.call('ZCOUNT', key, at, at) == 0 then
    return
  end
  if count == 0 then
    ALGORITHMS.sw.commit(key, now, p, slack, count, newest)
    return
  end
  if newest == true then
    newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  end
  local score = tonumber(newest[2])
  local member = sw_member(sw_mark(newest[1]) + p.cost, units_of(newest[1]) + p.cost, true)
  redis.call('ZREM', key, newest[1])
  -- More than one unit in an entry: the log is weighted from here on, as a commit makes it.
  redis.call('ZADD', key, score, member, -(count + p.cost), TOTAL)
  redis.call('PEXPIRE', key, ms(score + p.period - now) + slack)
end

function ALGORITHMS.sw.status(key, now, p, count)
  if count == 0 then
    return p.limit, 0
  end
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  return math.max(p.limit - count, 0), ms(tonumber(newest[2]) + p.period - now)
end

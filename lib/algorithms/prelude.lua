-- Shared by every algorithm script. Each algorithm adds { check, commit, status, after, refund }
-- to ALGORITHMS.
-- Times are integer microseconds; replies are integers (Lua floats would be truncated anyway).
local ALGORITHMS = {}

-- Microseconds to whole milliseconds, rounded up: a client told to wait never waits too little.
local function ms(us)
  return math.ceil(us / 1000)
end

-- A wait in whole microseconds, rounded up for the same reason. Waits travel in µs so that a
-- caller that holds rejections locally can end the hold exactly when the wait does.
local function us(wait)
  return math.ceil(wait)
end

-- A lock-out replaces a key's state, whatever the algorithm's type, with one negative integer,
-- -until (µs), and expires with it. Each algorithm notices it where it reads its state, so a key
-- that is not locked costs nothing more. The time a lock-out ends, or nil.
local function lock_of(key)
  local stored = redis.pcall('GET', key)
  stored = type(stored) == 'string' and tonumber(stored) or nil
  if stored and stored < 0 then
    return -stored
  end
end

-- The sorted-set algorithms (the log, the leases) keep one member per decision, weighted: its name
-- ends in ":<units>", or carries one unit when it has no colon (as in the former layout, which
-- kept one member per unit). The member `total` holds how many units the set holds, as minus its
-- score: it sorts below every entry, whose scores are times in µs, and no trim by time reaches it.
-- So a decision's work does not grow with its cost.
local TOTAL = 'total'

local function units_of(member)
  local units = string.match(member, ':(%d+)$')
  return units and tonumber(units) or 1
end

-- Records the units a set holds now; a set that holds none is deleted, as Redis deletes an empty
-- one. Returns the units.
local function set_total(key, units)
  if units <= 0 then
    redis.call('DEL', key)
    return 0
  end
  redis.call('ZADD', key, -units, TOTAL)
  return units
end

-- Drops the entries scored up to `upto` and returns the end of a lock-out in force, if any, then
-- the units the set holds. A lock-out shows as WRONGTYPE here; one that has just ended, though its
-- key has not expired yet, is deleted, leaving no set at all. Each entry is read once, when it
-- leaves, so trimming costs a decision no more than the entries it drops.
local function zset_open(key, upto, now)
  -- One read: the total (scored below 0, below any time) and the entries that have left.
  upto = math.max(upto, 0)
  local expired = redis.pcall('ZRANGEBYSCORE', key, '-inf', upto, 'WITHSCORES')
  if expired.err then
    local lock = lock_of(key)
    if lock and lock > now then
      return lock, 0
    end
    redis.call('DEL', key)
    return nil, 0
  end
  if expired[1] ~= TOTAL then
    -- No set, or one in the former layout: one unit per member. Counted once, then kept.
    if #expired > 0 then
      redis.call('ZREMRANGEBYSCORE', key, '-inf', upto)
    end
    local units = redis.call('ZCARD', key)
    if units > 0 then
      redis.call('ZADD', key, -units, TOTAL)
    end
    return nil, units
  end
  local total = -tonumber(expired[2])
  if #expired > 2 then
    for i = 3, #expired, 2 do
      total = total - units_of(expired[i])
    end
    redis.call('ZREMRANGEBYSCORE', key, '(0', upto)
    total = set_total(key, total)
  end
  return nil, total
end

-- The lease id of a decision, set by the algorithms that hand out leases; nil in scripts without
-- them, so that the others do not define it on every call.
local lease_id = nil

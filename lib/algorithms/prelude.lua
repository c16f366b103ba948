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

-- For the sorted-set algorithms: drops the members scored up to `upto`, and returns the end of a
-- lock-out in force, if any. A lock-out shows as WRONGTYPE here; one that has just ended, though
-- its key has not expired yet, is deleted, leaving no set at all.
local function zset_open(key, upto, now)
  if type(redis.pcall('ZREMRANGEBYSCORE', key, '-inf', upto)) == 'number' then
    return nil
  end
  local lock = lock_of(key)
  if lock and lock > now then
    return lock
  end
  redis.call('DEL', key)
end

-- The lease id of a decision, set by the algorithms that hand out leases; nil in scripts without
-- them, so that the others do not define it on every call.
local lease_id = nil

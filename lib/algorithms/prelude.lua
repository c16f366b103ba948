-- Shared by every algorithm script. Each algorithm adds { check, commit, status, after, refund }
-- to ALGORITHMS.
-- Times are integer microseconds; replies are integers (Lua floats would be truncated anyway).
local ALGORITHMS = {}

-- Microseconds to whole milliseconds, rounded up: a client told to wait never waits too little.
local function ms(us)
  return math.ceil(us / 1000)
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

-- The lease id of a decision, set by the algorithms that hand out leases; nil in scripts without
-- them, so that the others do not define it on every call.
local lease_id = nil

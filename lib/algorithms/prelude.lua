-- Shared by every algorithm script. Each algorithm adds { open, check, commit, status, after,
-- refund }, and each rate algorithm `charge`, to ALGORITHMS; decide.lua opens a key, then hands
-- what `open` read to the others. An algorithm may add `consume`, the usual consume in fewer
-- commands, which answers nothing when its case is not the usual one.
-- Times are integer microseconds; replies are integers (Lua floats would be truncated anyway).
local ALGORITHMS = {}

-- Microseconds to whole milliseconds, rounded up: a client told to wait never waits too little.
local function ms(us)
  return math.ceil(us / 1000)
end

-- What a check answers for a wait when the cost can never fit (no wait would help), and when only a
-- holder letting go of its lease can make room: that may happen at any moment, so no wait is
-- promised (clients are told to come back in a second; see ON_RELEASE_RETRY_US in algorithm.ts).
-- ON_OUTCOME: what the decision driver answers when only requests whose outcome is not known yet
-- fill a policy that counts some outcomes (see `pending` in decide.lua); told as ON_RELEASE is.
local NEVER, ON_RELEASE, ON_OUTCOME = -1, -2, -3

-- The most a charge can put a bucket in debt, in µs of refill or draining past empty (about 31
-- years, as far as a bucket itself may reach; see MAX_DEBT_US in algorithm.ts). A debt that long is
-- as good as forever, and bounding it keeps arrival times exact doubles, and TTLs integers Redis
-- accepts, whatever a caller charges.
local MAX_DEBT = 1e15

-- A wait in whole microseconds, rounded up for the same reason. Waits travel in µs so that a
-- caller that holds rejections locally can end the hold exactly when the wait does.
local function us(wait)
  return math.ceil(wait)
end

-- The window that holds `now`, for the window algorithms: the moment they count at, the window's
-- start and end (the next one's start), the previous window's start and the next window's end.
-- Windows of `period` aligned to the epoch; or a calendar policy's, from its six consecutive
-- starts around the caller's estimate of now (p.bounds, see decide.lua): the one of [b2, b3),
-- [b3, b4), [b4, b5) that holds Redis's own now, so that a caller whose clock is off by less than
-- a window still gets the right one, with the window before it and the one after. A caller off by
-- more (a broken clock) gets the nearest, and the algorithms count at the nearest moment it covers:
-- every wait, reset and weight stays within a window, and every TTL positive.
local function window_of(now, p)
  local b = p.bounds
  if not b then
    local start = now - math.fmod(now, p.period)
    return now, start, start + p.period, start - p.period, start + 2 * p.period
  end
  if now < b[2] then
    now = b[2]
  elseif now >= b[5] then
    now = b[5] - 1
  end
  local i = now < b[3] and 2 or now < b[4] and 3 or 4
  return now, b[i], b[i + 1], b[i - 1], b[i + 2]
end

-- A lock-out replaces a key's state, whatever the algorithm's type, with one negative integer,
-- -until (µs), and expires with it. An algorithm's `open` notices something other than its state
-- where it reads the key (a negative integer, or another type), so a key that is not locked costs
-- nothing more, and answers first with what stands there; decide.lua alone acts on it (see its
-- `open`). For a key of another type: the time the lock-out there ends, or 0 when it holds
-- anything else.
local function stand_in(key)
  local stored = redis.pcall('GET', key)
  stored = type(stored) == 'string' and tonumber(stored) or nil
  if stored and stored < 0 then
    return -stored
  end
  return 0
end

-- Reads a state an algorithm keeps packed in one string (one GET): `decoders` maps the string's
-- length to the function that unpacks it. A key written before the packed layouts held the same
-- numbers in a hash under `fields`, read by HMGET until rewritten. Answers nil and the numbers, nil
-- alone when there is no state, or, when the key holds something else, what stands there (see
-- stand_in) alone.
local function read_packed(key, decoders, fields)
  local stored = redis.pcall('GET', key)
  if type(stored) == 'string' then
    local decode = decoders[#stored]
    if decode then
      return nil, decode(stored)
    end
    return stand_in(key)
  end
  if stored and stored.err then
    -- The former layout, a hash; or a key of another type.
    stored = redis.pcall('HMGET', key, unpack(fields))
    if stored.err then
      return stand_in(key)
    end
    for i = 1, #fields do
      stored[i] = tonumber(stored[i])
    end
    return nil, unpack(stored, 1, #fields)
  end
  return nil
end

-- The sorted-set algorithms (the log, the leases) keep one member per decision, weighted: its name
-- ends in ":<units>", or carries one unit when it has no colon. A set whose members all carry one
-- unit stays in the plain layout, where ZCARD is the count and a trim reads nothing; the first
-- member of more (or a refund that leaves a gap in the log's marks) turns it weighted, and it stays
-- so until it empties. A weighted set holds the member `total`, minus its score the units held: it
-- sorts below every entry, whose scores are times in µs, and no trim by time reaches it. So a
-- decision's work does not grow with its cost, and one of cost 1 in a plain set does no more than
-- the one-member-per-unit layout did (which is itself the plain layout).
local TOTAL = 'total'

local function units_of(member)
  local units = string.match(member, ':(%d+)$')
  return units and tonumber(units) or 1
end

-- Records the units a weighted set holds now; a set that holds none is deleted, as Redis deletes
-- an empty one. Returns the units.
local function set_total(key, units)
  if units <= 0 then
    redis.call('DEL', key)
    return 0
  end
  redis.call('ZADD', key, -units, TOTAL)
  return units
end

-- Drops the entries scored up to `upto` and returns nil, the units the set holds, and whether it
-- is weighted; or, when the key is not a set (a lock-out shows as WRONGTYPE here), only what
-- stands there (see stand_in). A plain set is trimmed blind; a weighted one reads each entry
-- once, when it leaves, so trimming costs a decision no more than the entries it drops.
local function zset_open(key, upto)
  -- The lowest member tells the layout: `total` sorts first in a weighted set.
  local first = redis.pcall('ZRANGE', key, 0, 0, 'WITHSCORES')
  if first.err then
    return stand_in(key)
  end
  if first[1] ~= TOTAL then
    if first[1] and tonumber(first[2]) <= upto then
      redis.call('ZREMRANGEBYSCORE', key, '-inf', upto)
    end
    return nil, redis.call('ZCARD', key), false
  end
  local total = -tonumber(first[2])
  if upto < 0 then
    return nil, total, true
  end
  local expired = redis.call('ZRANGEBYSCORE', key, 0, upto, 'WITHSCORES')
  if #expired > 0 then
    for i = 1, #expired, 2 do
      total = total - units_of(expired[i])
    end
    redis.call('ZREMRANGEBYSCORE', key, 0, upto)
    total = set_total(key, total)
  end
  return nil, total, total > 0
end

-- The lease id of a decision, set by the algorithms that hand out leases; nil in scripts without
-- them, so that the others do not define it on every call.
local lease_id = nil

-- Leaky bucket as a meter, by GCRA (the "funnel"). Per key, the theoretical arrival time (TAT),
-- the moment the bucket would be empty again, with a record of its fill (see GCRA_STATE). The
-- bucket drains one request every interval = period / limit, rounded up to a whole microsecond
-- so it never drains faster than configured, and holds up to `burst` requests. A denial writes
-- nothing.

ALGORITHMS.gcra = {}

local function gcra_interval(p)
  return math.ceil(p.period / p.limit)
end

-- The state: five doubles packed in one string (struct '<ddddd', 40 bytes, which Redis keeps in
-- the key itself): the theoretical arrival time (tat); how long before it the key was last written
-- (at) and the bucket was last empty (since); the least the bucket has held since then (µs of
-- draining); and when since then it was last given something back (given - since + 1; 0 if
-- never). All integer µs, exact in a double; the record bounds a late give-back (see refund), its
-- times kept as offsets. One GET reads it and one SET writes it, with no text to format or parse.
local GCRA_STATE = '<ddddd'

local function gcra_state(tat, at, since, low, given)
  return struct.pack(GCRA_STATE, tat, tat - at, tat - since, low, given - since + 1)
end

-- A key written by an earlier version holds the same five numbers as decimal text, "<tat> <tat -
-- at> <tat - since> <low> <given - since + 1>", or the arrival time alone; read as such until
-- rewritten. Text of 40 characters is told from the packed state by its digits and spaces.
local function gcra_numbers(stored)
  if #stored == 40 and not string.find(stored, '^%d+ %d+ %d+ %d+ %d+$') then
    return struct.unpack(GCRA_STATE, stored)
  end
  local tat, written, emptied, low, given =
    string.match(stored, '^(%d+) (%d+) (%d+) (%d+) (%d+)$')
  if tat then
    return tonumber(tat), tonumber(written), tonumber(emptied), tonumber(low), tonumber(given)
  end
end

-- The theoretical arrival time, and, unless the bucket is empty, its record { at, since, low,
-- given }; or, when the key holds a lock-out, only its end.
function ALGORITHMS.gcra.open(key, now)
  local stored = redis.call('GET', key)
  if not stored then
    return nil, now
  end
  local tat, written, emptied, low, given = gcra_numbers(stored)
  if not tat then
    tat = tonumber(stored)
    if tat and tat < 0 then
      return -tat
    end
    if not tat or tat <= now then
      return nil, now
    end
    -- One integer, as an earlier version wrote it: counts as written, and empty, just now, since
    -- it does not say when: what it cannot tell, it gives back nothing of.
    return nil, tat, { now, now, 0, now }
  end
  if tat <= now then
    return nil, now
  end
  local since = tat - emptied
  return nil, tat, { tat - written, since, low, since - 1 + given }
end

-- Writes the arrival time `new_tat` now, after `tat` (earlier, for a give-back): the record starts
-- afresh when the bucket was empty.
local function gcra_write(key, now, slack, tat, new_tat, record)
  local since, low, given = now, new_tat - now, now - 1
  if record then
    since, low, given = record[2], math.min(record[3], tat - now, new_tat - now), record[4]
  end
  if new_tat < tat then
    given = now
  end
  local state = gcra_state(new_tat, now, since, low, given)
  redis.call('SET', key, state, 'PX', ms(new_tat - now) + slack)
end

-- With `ahead` (µs), a request that fits within that long is allowed and booked: the bucket takes
-- it now, and the retry time says when its slot begins. Bookings queue in the order they are
-- made, one interval apart once the burst is used up.
function ALGORITHMS.gcra.check(_, now, p, tat, _, ahead)
  if p.cost > p.burst then
    return 0, NEVER
  end
  local interval = gcra_interval(p)
  -- How far the bucket would overflow with this request in it, in microseconds of draining.
  local over = tat + p.cost * interval - now - p.burst * interval
  if over <= 0 then
    return 1, 0
  end
  if ahead and over <= ahead then
    return 1, us(over)
  end
  return 0, us(over)
end

-- A booked request leaves nothing remaining until its slot has passed.
function ALGORITHMS.gcra.after(now, p, tat)
  local interval = gcra_interval(p)
  local new_tat = tat + p.cost * interval
  return math.max(0, math.floor((p.burst * interval - (new_tat - now)) / interval)),
    ms(new_tat - now)
end

function ALGORITHMS.gcra.commit(key, now, p, slack, tat, record)
  gcra_write(key, now, slack, tat, tat + p.cost * gcra_interval(p), record)
  return ALGORITHMS.gcra.after(now, p, tat)
end

-- Moves the arrival time back by `cost` intervals for the request that arrived at `at` (µs; nil:
-- the newest), never before what it would be had that request never been made, which is never
-- before now: an empty bucket stays empty. Had the request not been made, the arrival time
-- would have been `cost` intervals earlier until the bucket ran empty, and each moment it ran
-- empty took that lead down to nothing: whenever the bucket since held `low` µs of draining,
-- the lead was at most `low`. So the arrival time moves back by no more than the least the
-- bucket has held since the request (now included). The record knows that exactly when nothing
-- was given back since the request, nor written after its moment: what was taken at that moment
-- only filled the bucket, so the least it has held since is what it holds now. Otherwise it
-- takes the least since the bucket was last empty (less than since the request, so never too
-- much); and a bucket empty since the request gives nothing back, as the lead would have
-- drained away by then.
function ALGORITHMS.gcra.refund(key, now, p, slack, tat, record, at)
  local low = tat - now
  if record and at and (at < record[1] or at <= record[4]) then
    if at < record[2] then
      return
    end
    low = math.min(record[3], low)
  end
  local new_tat = math.max(tat - p.cost * gcra_interval(p), tat - low)
  if new_tat <= now then
    redis.call('DEL', key)
  else
    gcra_write(key, now, slack, tat, new_tat, record)
  end
end

-- Records `cost` more requests without checking the limit (a reservation's usage beyond its
-- estimate, already spent): the arrival time moves on by their intervals, however far past the
-- burst that takes it (up to MAX_DEBT of draining past it), and the key lives until then. A
-- bucket has no windows: `at` is no matter.
function ALGORITHMS.gcra.charge(key, now, p, slack, tat, record)
  local interval = gcra_interval(p)
  local new_tat = math.min(tat + p.cost * interval, now + p.burst * interval + MAX_DEBT)
  gcra_write(key, now, slack, tat, new_tat, record)
end

function ALGORITHMS.gcra.status(key, now, p, tat)
  local interval = gcra_interval(p)
  return math.max(0, math.floor((p.burst * interval - (tat - now)) / interval)), ms(tat - now)
end

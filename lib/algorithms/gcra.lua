-- Leaky bucket as a meter, by GCRA (the "funnel"). One integer per key: the theoretical arrival
-- time (TAT), the moment the bucket would be empty again. The bucket drains one request every
-- interval = period / limit, rounded up to a whole microsecond so it never drains faster than
-- configured, and holds up to `burst` requests. A denial writes nothing.

ALGORITHMS.gcra = {}

local function gcra_interval(p)
  return math.ceil(p.period / p.limit)
end

-- The theoretical arrival time; or, when the key holds a lock-out, only its end.
function ALGORITHMS.gcra.open(key, now)
  local stored = tonumber(redis.call('GET', key))
  if stored and stored < 0 then
    return -stored
  end
  return nil, math.max(stored or now, now)
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

function ALGORITHMS.gcra.commit(key, now, p, slack, tat)
  local new_tat = tat + p.cost * gcra_interval(p)
  redis.call('SET', key, new_tat, 'PX', ms(new_tat - now) + slack)
  return ALGORITHMS.gcra.after(now, p, tat)
end

-- Moves the arrival time back by `cost` intervals, never before now: an empty bucket stays empty.
function ALGORITHMS.gcra.refund(key, now, p, slack, tat)
  local new_tat = math.max(tat - p.cost * gcra_interval(p), now)
  if new_tat <= now then
    redis.call('DEL', key)
  else
    redis.call('SET', key, new_tat, 'PX', ms(new_tat - now) + slack)
  end
end

-- Records `cost` more requests without checking the limit (a reservation's usage beyond its
-- estimate, already spent): the arrival time moves on by their intervals, however far past the
-- burst that takes it (up to MAX_DEBT of draining past it), and the key lives until then. A
-- bucket has no windows: `at` is no matter.
function ALGORITHMS.gcra.charge(key, now, p, slack, tat)
  local interval = gcra_interval(p)
  local new_tat = math.min(tat + p.cost * interval, now + p.burst * interval + MAX_DEBT)
  redis.call('SET', key, new_tat, 'PX', ms(new_tat - now) + slack)
end

function ALGORITHMS.gcra.status(key, now, p, tat)
  local interval = gcra_interval(p)
  return math.max(0, math.floor((p.burst * interval - (tat - now)) / interval)), ms(tat - now)
end

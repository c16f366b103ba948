-- Concurrency: how many holders may run at once. One sorted set per key with one member per lease,
-- weighted by its cost (see zset_open): the lease id, then ":<cost>" unless it is one. Scores are
-- when each lease expires (µs). A holder renews its lease while it runs, so a long call keeps it;
-- one that crashed stops renewing, and its lease frees itself `period` after the last renewal.
-- A rejection writes nothing.

ALGORITHMS.cc = {}

local function cc_member(id, cost)
  if cost == 1 then
    return string.format('%d', id)
  end
  return string.format('%d:%d', id, cost)
end

-- The units the leases held now take, and whether the set is weighted (see zset_open).
function ALGORITHMS.cc.open(key, now)
  -- Expired leases first: a lease counts until its score.
  return zset_open(key, now)
end

function ALGORITHMS.cc.check(_, _, p, count)
  if p.cost > p.limit then
    return 0, NEVER
  end
  if count + p.cost <= p.limit then
    return 1, 0
  end
  -- A release may free a slot at any moment: a rejection promises no wait.
  return 0, ON_RELEASE
end

function ALGORITHMS.cc.after(_, p, count)
  return p.limit - count - p.cost, ms(p.period)
end

-- The first id from `id` whose lease of this cost is not held in this key.
function ALGORITHMS.cc.free(key, p, id)
  if p.cost > 0 then
    while redis.call('ZSCORE', key, cc_member(id, p.cost)) do
      id = id + 1
    end
  end
  return id
end

-- A decision's lease id: the first from now that is free in every key of a policy with leases
-- (the same id in each, so that one id frees them all); nil when no policy has leases.
lease_id = function(keys, policies, now)
  local id, moved, any = now, true, false
  while moved do
    moved = false
    for i = 1, #keys do
      local free = policies[i].algorithm.free
      if free then
        local next_id = free(keys[i], policies[i], id)
        moved = moved or next_id ~= id
        id, any = next_id, true
      end
    end
  end
  return any and id or nil
end

function ALGORITHMS.cc.commit(key, now, p, slack, count, weighted, lease)
  if weighted or p.cost > 1 then
    redis.call('ZADD', key, now + p.period, cc_member(lease, p.cost), -(count + p.cost), TOTAL)
  elseif p.cost == 1 then
    redis.call('ZADD', key, now + p.period, cc_member(lease, 1))
  end
  -- Every lease expires a period after it was taken or renewed at the latest, and so does the key.
  redis.call('PEXPIRE', key, ms(p.period) + slack)
  return ALGORITHMS.cc.after(now, p, count)
end

function ALGORITHMS.cc.release(key, _, p, total, weighted, lease)
  if total == 0 or p.cost == 0 then
    return
  end
  if redis.call('ZREM', key, cc_member(lease, p.cost)) == 1 and weighted then
    set_total(key, total - p.cost)
  end
end

-- Extends a lease held now by a period; false when it is gone (expired, reset).
function ALGORITHMS.cc.renew(key, now, p, slack, lease)
  if p.cost > 0 then
    -- What is left after the trim in `open` has not expired.
    local member = cc_member(lease, p.cost)
    if not redis.call('ZSCORE', key, member) then
      return false
    end
    redis.call('ZADD', key, 'XX', now + p.period, member)
  end
  redis.call('PEXPIRE', key, ms(p.period) + slack)
  return true
end

-- Gives back `cost` units of the leases that expire last (the larger name among equals). A lease
-- given back in part keeps the rest under a name of its own ("<id>:<cost>:<left>"), which its
-- holder no longer frees or renews: it lets go when it expires.
function ALGORITHMS.cc.refund(key, _, p, _, total, weighted)
  if not weighted then
    -- One unit per lease.
    redis.call('ZPOPMAX', key, p.cost)
    return
  end
  local left = p.cost
  -- Each turn but the last removes a lease: no more turns than leases ever taken.
  while left > 0 and total > 0 do
    local last = redis.call('ZPOPMAX', key)
    local units = units_of(last[1])
    if units > left then
      local held = string.match(last[1], '^%d+:%d+')
      redis.call('ZADD', key, last[2], string.format('%s:%d', held, units - left))
      units = left
    end
    left, total = left - units, total - units
  end
  set_total(key, total)
end

function ALGORITHMS.cc.status(key, now, p, count)
  if count == 0 then
    return p.limit, 0
  end
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  return math.max(p.limit - count, 0), ms(tonumber(last[2]) - now)
end

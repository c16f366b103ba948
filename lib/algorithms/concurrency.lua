-- Concurrency: how many holders may run at once. One sorted set per key with one member per unit
-- of a lease: the lease id, then id + 1 ... for a cost above one, unique integers all. Scores are
-- when each expires (µs). A holder renews its lease while it runs, so a long call keeps it; one
-- that crashed stops renewing, and its lease frees itself `period` after the last renewal.
-- A rejection writes nothing.

ALGORITHMS.cc = {}

-- A release can free a slot at any moment, so a rejection promises no wait; clients are told to
-- come back in a second.
local CC_RETRY_US = 1000000

function ALGORITHMS.cc.check(key, now, p)
  -- Expired leases first: a lease counts until its score.
  local lock = zset_open(key, now, now)
  if lock then
    return 0, lock - now, 0, nil, lock
  end
  local count = redis.call('ZCARD', key)
  if p.cost > p.limit then
    return 0, -1, count
  end
  if count + p.cost <= p.limit then
    return 1, 0, count
  end
  return 0, CC_RETRY_US, count
end

function ALGORITHMS.cc.after(_, p, count)
  return p.limit - count - p.cost, ms(p.period)
end

-- The first id from `id` on whose `cost` members are all free in this key.
function ALGORITHMS.cc.free(key, p, id)
  local j = 0
  while j < p.cost do
    if redis.call('ZSCORE', key, id + j) then
      id, j = id + j + 1, 0
    else
      j = j + 1
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

function ALGORITHMS.cc.commit(key, now, p, slack, count, _, lease)
  for j = 0, p.cost - 1 do
    redis.call('ZADD', key, now + p.period, lease + j)
  end
  -- Every member expires a period after it was added or renewed at the latest, and so does the key.
  redis.call('PEXPIRE', key, ms(p.period) + slack)
  return ALGORITHMS.cc.after(now, p, count)
end

function ALGORITHMS.cc.release(key, _, p, lease)
  for j = 0, p.cost - 1 do
    redis.pcall('ZREM', key, lease + j)
  end
end

-- Extends a lease held now by a period; false when it is gone (expired, reset, locked out).
function ALGORITHMS.cc.renew(key, now, p, slack, lease)
  for j = 0, p.cost - 1 do
    local score = redis.pcall('ZSCORE', key, lease + j)
    if type(score) ~= 'string' or tonumber(score) <= now then
      return false
    end
  end
  for j = 0, p.cost - 1 do
    redis.call('ZADD', key, 'XX', now + p.period, lease + j)
  end
  redis.call('PEXPIRE', key, ms(p.period) + slack)
  return true
end

-- Frees the `cost` leases that expire last.
function ALGORITHMS.cc.refund(key, now, p)
  if not zset_open(key, now, now) then
    redis.call('ZPOPMAX', key, p.cost)
  end
end

function ALGORITHMS.cc.status(key, now, p, count)
  if count == 0 then
    return p.limit, 0
  end
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  return math.max(p.limit - count, 0), ms(tonumber(last[2]) - now)
end

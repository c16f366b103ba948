-- Sliding-window log: one sorted set per key, one entry per allowed request.
-- Scores are arrival times in microseconds; members are unique integers, so two requests can
-- never collapse into one entry. Exact: no span of one period ever holds more than `limit`.
-- Memory: O(limit) per key.

ALGORITHMS.sw = {}

function ALGORITHMS.sw.check(key, now, p)
  -- Trim before counting: only arrivals in (now - period, now] are in the window.
  local lock = zset_open(key, now - p.period, now)
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
  -- The request fits once the (count + cost - limit) oldest entries have left the window.
  local index = count + p.cost - p.limit - 1
  local blocker = redis.call('ZRANGE', key, index, index, 'WITHSCORES')
  return 0, tonumber(blocker[2]) + p.period - now, count
end

function ALGORITHMS.sw.after(_, p, count)
  return p.limit - count - p.cost, ms(p.period)
end

function ALGORITHMS.sw.commit(key, now, p, slack, count)
  -- ZADD NX refuses a member that exists; step past it so two requests never share one.
  local member = now
  for _ = 1, p.cost do
    while redis.call('ZADD', key, 'NX', now, member) == 0 do
      member = member + 1
    end
    member = member + 1
  end
  -- The newest entry leaves the window after exactly one period, and so does the key.
  redis.call('PEXPIRE', key, ms(p.period) + slack)
  return ALGORITHMS.sw.after(now, p, count)
end

-- Forgets the `cost` most recent requests, or those that arrived at `at`. The key's TTL still
-- covers what is left.
function ALGORITHMS.sw.refund(key, now, p, _, at)
  if zset_open(key, now - p.period, now) then
    return
  end
  if not at then
    redis.call('ZPOPMAX', key, p.cost)
    return
  end
  -- Entries of one arrival time are alike whatever their members, so any `cost` of them will do.
  local members = redis.call('ZRANGEBYSCORE', key, at, at, 'LIMIT', 0, p.cost)
  if #members > 0 then
    redis.call('ZREM', key, unpack(members))
  end
end

function ALGORITHMS.sw.status(key, now, p, count)
  if count == 0 then
    return p.limit, 0
  end
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  return math.max(p.limit - count, 0), ms(tonumber(newest[2]) + p.period - now)
end

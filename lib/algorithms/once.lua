-- Decision ids: a decision that applies something carries an id key, so that a copy of it (resent
-- by a client after a reconnect, or sent again by the store after a lost reply) answers what the
-- first one decided and applies nothing (see `once` in decide.lua; a batch's id, batch.lua).

-- A decision's id key lives while a copy of the decision could still arrive: until its deadline,
-- plus a margin; with no deadline, for a fixed while. RedisStore sends copies until its timeout
-- has passed since the first was sent, which on Redis's clock is the deadline plus the error of
-- the store's estimate of that clock (at most a round trip, early): the margin covers that and the
-- copy's way to Redis. A copy that arrives later finds no id, and is refused as late.
local ONCE_MARGIN_MS, ONCE_WITHOUT_DEADLINE_MS = 500, 5000

-- Whether a decision answered `reply` after applying something that a copy of it must not apply
-- again. A consume or reserve that was rejected applied nothing that a second run would apply
-- again, so only its answer could differ: nothing is kept for it, which keeps rejections cheap.
local function applied(op, reply)
  if op == 'c' or op == 'w' then
    return reply[1] == 1
  end
  return op ~= 'p' and reply[1] >= 0
end

-- How long, in ms, a decision's id keeps its reply (see ONCE_MARGIN_MS).
local function once_ms(deadline, now)
  return deadline and ms(deadline - now) + ONCE_MARGIN_MS or ONCE_WITHOUT_DEADLINE_MS
end

-- Stores the reply of a decision that carries an id key, so that a copy of it (resent by a client
-- after a reconnect, or retried by the store after a lost reply) answers the same and applies
-- nothing.
local function remember(once, deadline, now, op, reply)
  if once and applied(op, reply) then
    redis.call('SET', once, cmsgpack.pack(reply), 'PX', once_ms(deadline, now))
  end
  return reply
end

-- Whether Redis's clock has passed `deadline` (µs), where the script cannot read that clock: the
-- id key is set to expire at the deadline, which Redis does at once when it has passed. Only a
-- decision with an id applies anything, so only it needs the check; the key is gone afterwards.
local function passed(once, deadline)
  if not once then
    return false
  end
  redis.call('SET', once, '')
  redis.call('PEXPIREAT', once, string.format('%d', math.floor(deadline / 1000)))
  local left = redis.call('PTTL', once)
  redis.call('DEL', once)
  return left < 0
end

-- Decides one request against one or more policies, atomically: every policy is checked first,
-- and only when all of them allow it is it recorded in each. KEYS[i] belongs to policy i, and all
-- keys share one hash tag, so this works on Redis Cluster.
--
-- ARGV[1]  now in microseconds; empty in production, where Redis TIME is the one shared clock
-- ARGV[2]  ms added to every TTL: 0 in production; tests that simulate time pad TTLs so real
--          expiry cannot race the simulated clock
-- ARGV[3]  the last moment (Redis TIME, µs) the caller still waits for this answer; empty for none
-- ARGV[4]  what to do: c consume; p peek (answer as consume would, record nothing); r refund
--          (give `cost` back to every policy; `r<µs>` gives back the request that arrived then,
--          wherever the windows have moved since); x reset (forget the keys and any lock-out); b block
--          (lock every key out for the policy's lock-out time); w<µs> reserve (consume, but the
--          bucket algorithms also book a request that fits within that long, answering with the
--          wait in place of the retry time); l<id> release the lease id; n<id> renew it (allowed
--          is 0 when it is gone). A refund, reset, release or renewal answers with what is left
--          afterwards: allowed, and each policy's remaining quota.
-- ARGV[5..] six per policy: algorithm id, period (µs), limit, burst, cost, lock-out (µs; 0: none).
--          A policy with a lock-out that rejects a request locks its key out from that moment:
--          its state is replaced by the lock-out (see lock_of), and every request meanwhile is
--          rejected without touching it.
--
-- Reply: { allowed, then four per policy: allowed, remaining, retry_after_ms (-1: never),
--          reset_after_ms, then now (µs), then the lease id when a concurrency policy took one };
--          { -1, now } when it came too late and did nothing.

local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  -- A decision that reaches Redis after its caller stopped waiting (a paused server, a command
  -- a client queued or resent) was already answered by the fallback: counting it would count
  -- that request twice.
  local deadline = tonumber(ARGV[3])
  if deadline and now > deadline then
    return { -1, now }
  end
end
local slack = tonumber(ARGV[2])
local op, at = ARGV[4], nil
if #op > 1 then
  at = tonumber(string.sub(op, 2))
  op = string.sub(op, 1, 1)
end

local function policy(i)
  local a = 4 + (i - 1) * 6
  return {
    algorithm = ALGORITHMS[ARGV[a + 1]],
    period = tonumber(ARGV[a + 2]),
    limit = tonumber(ARGV[a + 3]),
    burst = tonumber(ARGV[a + 4]),
    cost = tonumber(ARGV[a + 5]),
    block = tonumber(ARGV[a + 6]),
  }
end

local function lock_out(key, p)
  redis.call('SET', key, -(now + p.block), 'PX', ms(p.block) + slack)
end

-- Remaining and reset of a policy whose check rejected the request; starts its lock-out when it
-- has one (only a consume writes it; a peek answers as if). A cost that can never fit locks
-- nothing: no wait would help.
local function rejected(key, p, retry, w1, w2, lock)
  if lock then
    return 0, retry, retry
  end
  if p.block > 0 and retry >= 0 then
    if op == 'c' or op == 'w' then
      lock_out(key, p)
    end
    return 0, ms(p.block), ms(p.block)
  end
  local remaining, reset = p.algorithm.status(key, now, p, w1, w2)
  return remaining, reset, retry
end

-- One policy consumed, the usual case: the same steps without the tables that gather several.
if #KEYS == 1 and op == 'c' then
  local p = policy(1)
  local allowed, retry, w1, w2, lock = p.algorithm.check(KEYS[1], now, p)
  local remaining, reset, lease
  if allowed == 1 then
    if p.algorithm.free then
      lease = p.algorithm.free(KEYS[1], p, now)
    end
    remaining, reset = p.algorithm.commit(KEYS[1], now, p, slack, w1, w2, lease)
  else
    remaining, reset, retry = rejected(KEYS[1], p, retry, w1, w2, lock)
  end
  return { allowed, allowed, remaining, retry, reset, now, lease }
end

local policies, checks, lost = {}, {}, false
local ahead = op == 'w' and at or nil
for i = 1, #KEYS do
  local p = policy(i)
  local a = p.algorithm
  policies[i] = p
  if op == 'x' then
    redis.call('DEL', KEYS[i])
  elseif op == 'r' and p.cost > 0 then
    a.refund(KEYS[i], now, p, slack, at)
  elseif op == 'b' then
    lock_out(KEYS[i], p)
  elseif op == 'l' and a.release then
    a.release(KEYS[i], now, p, at)
  elseif op == 'n' and a.renew then
    lost = not a.renew(KEYS[i], now, p, slack, at) or lost
  end
  -- What is left afterwards is what a request of no cost would see.
  if op == 'x' or op == 'r' or op == 'l' or op == 'n' then
    p.cost = 0
  end
end

local allowed = 1
for i = 1, #KEYS do
  local p = policies[i]
  checks[i] = { p.algorithm.check(KEYS[i], now, p, ahead) }
  if checks[i][1] == 0 then
    allowed = 0
  end
end
local takes = allowed == 1 and (op == 'c' or op == 'w')
-- Only scripts with the concurrency algorithm define lease_id (see concurrency.lua).
local lease = takes and lease_id and lease_id(policies, now) or nil

local reply = { allowed }
for i = 1, #KEYS do
  local p, c = policies[i], checks[i]
  local remaining, reset, retry = nil, nil, c[2]
  if c[1] == 0 then
    remaining, reset, retry = rejected(KEYS[i], p, c[2], c[3], c[4], c[5])
  elseif takes then
    remaining, reset = p.algorithm.commit(KEYS[i], now, p, slack, c[3], c[4], lease)
  elseif op ~= 'p' or allowed == 0 then
    remaining, reset = p.algorithm.status(KEYS[i], now, p, c[3], c[4])
  else
    remaining, reset = p.algorithm.after(now, p, c[3], c[4])
  end
  reply[#reply + 1] = c[1]
  reply[#reply + 1] = remaining
  reply[#reply + 1] = retry
  reply[#reply + 1] = reset
end
if lost then
  reply[1] = 0
end
reply[#reply + 1] = now
reply[#reply + 1] = lease
return reply

-- Decides one request against one or more policies, atomically: every policy is checked first,
-- and only when all of them allow it is it recorded in each. KEYS[i] belongs to policy i, and all
-- keys share one hash tag, so this works on Redis Cluster.
--
-- ARGV[1]  now in microseconds; empty in production, where Redis TIME is the one shared clock
-- ARGV[2]  ms added to every TTL: 0 in production; tests that simulate time pad TTLs so real
--          expiry cannot race the simulated clock
-- ARGV[3]  the last moment (Redis TIME, µs) the caller still waits for this answer; empty for none
-- ARGV[4]  what to do: c consume; p peek (answer as consume would, record nothing); r refund
--          (give `cost` back to every policy); x reset (forget the keys). A refund or reset
--          answers with what is left afterwards: allowed, and each policy's remaining quota.
-- ARGV[5..] five per policy: algorithm id, period (µs), limit, burst, cost
--
-- Reply: { allowed, then four per policy: allowed, remaining, retry_after_ms (-1: never),
--          reset_after_ms, then now (µs) }; { -1, now } when it came too late and did nothing.

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
local op = ARGV[4]

local function policy(i)
  local a = 4 + (i - 1) * 5
  return {
    algorithm = ALGORITHMS[ARGV[a + 1]],
    period = tonumber(ARGV[a + 2]),
    limit = tonumber(ARGV[a + 3]),
    burst = tonumber(ARGV[a + 4]),
    cost = tonumber(ARGV[a + 5]),
  }
end

-- One policy consumed, the usual case: the same steps without the tables that gather several.
if #KEYS == 1 and op == 'c' then
  local p = policy(1)
  local allowed, retry, w1, w2 = p.algorithm.check(KEYS[1], now, p)
  local remaining, reset
  if allowed == 1 then
    remaining, reset = p.algorithm.commit(KEYS[1], now, p, slack, w1, w2)
  else
    remaining, reset = p.algorithm.status(KEYS[1], now, p, w1, w2)
  end
  return { allowed, allowed, remaining, retry, reset, now }
end

local policies, checks = {}, {}
for i = 1, #KEYS do
  policies[i] = policy(i)
  if op == 'x' then
    redis.call('DEL', KEYS[i])
  elseif op == 'r' then
    policies[i].algorithm.refund(KEYS[i], now, policies[i], slack)
  end
  -- What is left afterwards is what a request of no cost would see.
  if op == 'x' or op == 'r' then
    policies[i].cost = 0
  end
end

local allowed = 1
for i = 1, #KEYS do
  local p = policies[i]
  checks[i] = { p.algorithm.check(KEYS[i], now, p) }
  if checks[i][1] == 0 then
    allowed = 0
  end
end

local reply = { allowed }
for i = 1, #KEYS do
  local p, c = policies[i], checks[i]
  local remaining, reset
  if allowed == 0 or op == 'r' or op == 'x' then
    remaining, reset = p.algorithm.status(KEYS[i], now, p, c[3], c[4])
  elseif op == 'c' then
    remaining, reset = p.algorithm.commit(KEYS[i], now, p, slack, c[3], c[4])
  else
    remaining, reset = p.algorithm.after(now, p, c[3], c[4])
  end
  reply[#reply + 1] = c[1]
  reply[#reply + 1] = remaining
  reply[#reply + 1] = c[2]
  reply[#reply + 1] = reset
end
reply[#reply + 1] = now
return reply

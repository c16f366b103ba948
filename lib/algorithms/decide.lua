-- Decides one request against one or more policies, atomically: every policy is checked first,
-- and only when all of them allow it is it recorded in each. keys[i] belongs to policy i, and all
-- keys share one hash tag, so this works on Redis Cluster. A script ends by calling
-- decide(KEYS, ARGV); the function library registers decide itself, so that everything above it
-- is defined once when the library loads rather than on every call.
--
-- argv[1]  what to do: c consume; p peek (answer as consume would, record nothing); r refund
--          (give `cost` back to every policy; `r<µs>` gives back the request that arrived then,
--          wherever the windows have moved since); x reset (forget the keys and any lock-out); b block
--          (lock every key out for the policy's lock-out time); w<µs> reserve (consume, but the
--          bucket algorithms also book a request that fits within that long, answering with the
--          wait in place of the retry time); l<id> release the lease id; n<id> renew it (allowed
--          is 0 when it is gone); s<µs> settle the reservation decided then: each policy's cost is
--          signed, charged beyond the estimate (> 0, past the limit if need be: the units are
--          spent) or given back as r<µs> would (< 0), where the reservation was counted. A
--          refund, reset, release, renewal or settlement answers with what is left afterwards:
--          allowed (0 while a policy is over its limit), and each policy's remaining quota.
--          Encoded from a store call in lib/stores/call-encoding.ts, as are a block's lock-out and
--          costs in argv[3..]; the memory twin, decide.ts, takes the same encoding.
--          A consume, reserve or refund may end in `;<u1>,<u2>,...`, one number per policy: the
--          units of a request whose outcome is not known yet, on a route that counts only some
--          outcomes (0 for a policy that counts every request). Each policy with units has its
--          ledger of such requests among the keys (see `pending` below). A consume or reserve
--          that counts the request adds it there; a refund (sent once the outcome is known, even
--          when it gives nothing back) takes `r<µs>`'s request out again.
-- argv[2]  the clock, in one of three forms:
--          - `<deadline µs>`, or empty for none: the usual form. Redis TIME is the one shared
--            clock, and the deadline is the last moment (on that clock) the caller still waits
--            for the answer.
--          - `c<now µs>:<deadline µs>` (the deadline may be empty): the caller's clock, for a
--            server that refuses TIME inside scripts (answered { -2 } below). `now` is the
--            caller's estimate of Redis's time (see lib/stores/redis/caller-clock.ts). A script
--            cannot read the time there, so the deadline is checked against the expiry of the
--            decision's id key instead, which follows Redis's clock: see `passed` in once.lua.
--          - `t<now µs>:<ms>`: tests that simulate time; the ms are added to every TTL so that
--            real expiry cannot race the simulated clock. No deadline.
-- argv[3..] one per policy, joined by the caller once per route: "<algorithm id> <period µs>
--          <limit> <burst> <lock-out µs; 0: none> <cost>". A policy with a lock-out that rejects a
--          request locks its key out from that moment: its state is replaced by the lock-out (see
--          stand_in), and every request meanwhile is rejected without touching it (see `open`).
--          A policy whose windows follow the calendar (fixed window and sliding counter only)
--          carries, in place of the period, six consecutive window starts in µs and then its
--          unit's longest window (µs), joined by commas, "fw <b1>,...,<b6>,<longest> <limit> ...":
--          [b3, b4) holds the caller's estimate of now, and the window that holds Redis's own is
--          picked (see window_of); the longest sets how long the keys live. The caller joins them
--          once per window.
-- keys after the policies' own: the ledgers, one per policy with units in argv[1], in order;
--          then, when there is one more key: the decision's id key (see once.lua). A decision
--          that writes carries one, so that it never applies twice.
--
-- Reply: { allowed, then four per policy: allowed, remaining, retry_after_us (NEVER, ON_RELEASE,
--          ON_OUTCOME),
--          reset_after_ms, then now (µs), then the lease id when a concurrency policy took one };
--          { -1, now } when it came too late and did nothing; { -2 } when the server refused TIME,
--          and it did nothing. A decision whose id key is set answers the reply stored there, and
--          does nothing, whenever it arrives: a copy of a decision that applied answers as the
--          decision did, even past its deadline.

-- Policies by their argument. A function library keeps them between calls, so that each route's
-- policy is parsed once; a script starts afresh on every call. Never changed once parsed, and
-- bounded, since a caller may vary the cost.
local POLICIES, POLICY_COUNT = {}, 0

local function policy(arg)
  local p = POLICIES[arg]
  if p then
    return p
  end
  local code, period, limit, burst, block, cost = string.match(arg, '^(%w+) (%S+) (%S+) (%S+) (%S+) (%S+)$')
  local bounds = nil
  if string.find(period, ',', 1, true) then
    bounds = {}
    for start in string.gmatch(period, '[^,]+') do
      bounds[#bounds + 1] = tonumber(start)
    end
  end
  p = {
    algorithm = ALGORITHMS[code],
    period = tonumber(period),
    bounds = bounds,
    limit = tonumber(limit),
    burst = tonumber(burst),
    cost = tonumber(cost),
    block = tonumber(block),
  }
  if POLICY_COUNT >= 1000 then
    POLICIES, POLICY_COUNT = {}, 0
  end
  POLICIES[arg], POLICY_COUNT = p, POLICY_COUNT + 1
  return p
end

-- The same policy at another cost: with none, what is left afterwards is what a request of no
-- cost would see.
local function costing(p, cost)
  return {
    algorithm = p.algorithm,
    period = p.period,
    bounds = p.bounds,
    limit = p.limit,
    burst = p.burst,
    cost = cost,
    block = p.block,
  }
end

local function lock_out(key, p, now, slack)
  redis.call('SET', key, -(now + p.block), 'PX', ms(p.block) + slack)
end

-- Whether only the requests in flight on its ledger make a policy reject: without them, the
-- request would fit. Then it waits for their outcomes rather than starting a lock-out.
local function pending(key, ledger, now, p, w1, w2, ahead)
  local units = in_flight(ledger, now, p)
  if units == 0 then
    return false
  end
  return p.algorithm.check(key, now, costing(p, math.max(p.cost - units, 0)), w1, w2, ahead) == 1
end

-- Opens a policy's key for its algorithm: the end of a lock-out in force, or else nil and what the
-- algorithm read of its state. Lock-outs are handled here alone. One that has ended, or anything
-- else that stands in the key in place of the state, counts as no state at all: it is deleted,
-- and the key read again, now empty. A key that is not locked costs nothing more.
local function open(key, now, p)
  local stand_in, w1, w2 = p.algorithm.open(key, now, p)
  if not stand_in then
    return nil, w1, w2
  end
  if stand_in > now then
    return stand_in
  end
  redis.call('DEL', key)
  return p.algorithm.open(key, now, p)
end

-- Remaining and reset of a policy whose check rejected the request; starts its lock-out when it
-- has one (only a consume writes it; a peek answers as if). A cost that can never fit locks
-- nothing: no wait would help.
local function rejected(key, p, now, slack, op, retry, w1, w2, lock)
  if lock then
    return 0, ms(retry), retry
  end
  if p.block > 0 and retry ~= NEVER then
    if op == 'c' or op == 'w' then
      lock_out(key, p, now, slack)
    end
    return 0, ms(p.block), p.block
  end
  local remaining, reset = p.algorithm.status(key, now, p, w1, w2)
  return remaining, reset, retry
end

-- One policy consumed: allowed, remaining, retry, reset, and the lease it took if any. The usual
-- decision, which decide and decide_batch (batch.lua) make without the tables that gather several.
local function consume_one(key, p, now, slack)
  -- An algorithm may do the usual case in fewer commands (see fixed-window.lua).
  local quick = p.algorithm.consume
  if quick then
    local allowed, remaining, retry, reset = quick(key, now, p, slack)
    if allowed then
      return allowed, remaining, retry, reset
    end
  end
  local lock, w1, w2 = open(key, now, p)
  local allowed, retry = 0, nil
  if lock then
    retry = lock - now
  else
    allowed, retry = p.algorithm.check(key, now, p, w1, w2)
  end
  local remaining, reset, lease
  if allowed == 1 then
    if p.algorithm.free then
      lease = p.algorithm.free(key, p, now)
    end
    remaining, reset = p.algorithm.commit(key, now, p, slack, w1, w2, lease)
  else
    remaining, reset, retry = rejected(key, p, now, slack, 'c', retry, w1, w2, lock)
  end
  return allowed, remaining, retry, reset, lease
end

-- Redis's clock in µs, or false where the server refuses TIME in scripts (an ACL without TIME, a
-- managed service): the store then sends its own clock instead.
local function redis_now()
  local t = redis.pcall('TIME')
  if t.err then
    return false
  end
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- `time`: Redis's clock as a batch read it for all its decisions (see batch.lua), false when the
-- server refused it; nil to read it here.
local function decide(keys, argv, time)
  local now, slack, deadline, caller = nil, 0, nil, false
  local clock = argv[2]
  local form = string.byte(clock, 1)
  if form == 116 then -- 't'
    local at, pad = string.match(clock, '^t(%S+):(%S+)$')
    now, slack = tonumber(at), tonumber(pad)
  elseif form == 99 then -- 'c'
    local at, by = string.match(clock, '^c(%d+):(%d*)$')
    now, deadline, caller = tonumber(at), tonumber(by), true
  else
    if time == nil then
      time = redis_now()
    end
    if not time then
      return { -2 }
    end
    now, deadline = time, tonumber(clock)
  end
  local op, at, units, ledgers = argv[1], nil, nil, {}
  local list = string.find(op, ';', 1, true)
  if list then
    units = units_of(string.sub(op, list + 1))
    op = string.sub(op, 1, list - 1)
    -- Taken off the keys in order, so that what is left reads as it always has.
    local first_ledger = #argv - 1
    for i = 1, #units do
      if units[i] ~= 0 then
        ledgers[i] = table.remove(keys, first_ledger)
      end
    end
  end
  local once = nil
  if #keys > #argv - 2 then
    once = table.remove(keys)
    local first = redis.call('GET', once)
    if first then
      return cmsgpack.unpack(first)
    end
  end
  -- A decision that reaches Redis after its caller stopped waiting (a paused server, a command a
  -- client queued or resent) was already answered by the fallback: counting it would count that
  -- request twice. Checked after the id, so that a copy of a decision that did apply still answers
  -- what it decided rather than leave the fallback to answer a request Redis counted.
  if deadline and (caller and passed(once, deadline) or (not caller and now > deadline)) then
    return { -1, now }
  end
  if #op > 1 then
    at = tonumber(string.sub(op, 2))
    op = string.sub(op, 1, 1)
  end

  -- One policy consumed, the usual case: the same steps without the tables that gather several.
  if #keys == 1 and op == 'c' and not units then
    local allowed, remaining, retry, reset, lease = consume_one(keys[1], policy(argv[3]), now, slack)
    return remember(once, deadline, now, op, { allowed, allowed, remaining, retry, reset, now, lease })
  end

  local policies, checks, lost = {}, {}, false
  local ahead = op == 'w' and at or nil
  for i = 1, #keys do
    local p = policy(argv[2 + i])
    local a = p.algorithm
    if op == 'x' then
      redis.call('DEL', keys[i])
    elseif op == 'b' then
      lock_out(keys[i], p, now, slack)
    elseif
      (op == 'r' and p.cost > 0) or (op == 's' and p.cost ~= 0 and a.charge)
      or (op == 'l' and a.release) or (op == 'n' and a.renew)
    then
      -- A locked-out key holds nothing to give back, to charge, to free or to renew. Leases are
      -- never reserved, so they have nothing to settle (they have no charge).
      local lock, w1, w2 = open(keys[i], now, p)
      if lock then
        lost = lost or op == 'n'
      elseif op == 'r' then
        a.refund(keys[i], now, p, slack, w1, w2, at)
      elseif op == 's' and p.cost > 0 then
        a.charge(keys[i], now, p, slack, w1, w2, at)
      elseif op == 's' then
        a.refund(keys[i], now, costing(p, -p.cost), slack, w1, w2, at)
      elseif op == 'l' then
        a.release(keys[i], now, p, w1, w2, at)
      else
        lost = not a.renew(keys[i], now, p, slack, at) or lost
      end
    end
    if op == 'r' and ledgers[i] and at then
      enter(ledgers[i], at, -units[i], p, slack)
    end
    if op == 'x' or op == 'r' or op == 'l' or op == 'n' or op == 's' then
      p = costing(p, 0)
    end
    policies[i] = p
  end

  local allowed = 1
  for i = 1, #keys do
    local p = policies[i]
    local lock, w1, w2 = open(keys[i], now, p)
    if lock then
      checks[i] = { 0, lock - now, nil, nil, lock }
    else
      local ok, retry = p.algorithm.check(keys[i], now, p, w1, w2, ahead)
      checks[i] = { ok, retry, w1, w2 }
      if ok == 0 and retry ~= NEVER and ledgers[i] and (op == 'c' or op == 'w') then
        checks[i][6] = pending(keys[i], ledgers[i], now, p, w1, w2, ahead)
      end
    end
    if checks[i][1] == 0 then
      allowed = 0
    end
  end
  local takes = allowed == 1 and (op == 'c' or op == 'w')
  -- Only scripts with the concurrency algorithm define lease_id (see concurrency.lua).
  local lease = takes and lease_id and lease_id(keys, policies, now) or nil

  local reply = { allowed }
  for i = 1, #keys do
    local p, c = policies[i], checks[i]
    local remaining, reset, retry = nil, nil, c[2]
    if c[6] then
      remaining, reset = p.algorithm.status(keys[i], now, p, c[3], c[4])
      retry = ON_OUTCOME
    elseif c[1] == 0 then
      remaining, reset, retry = rejected(keys[i], p, now, slack, op, c[2], c[3], c[4], c[5])
    elseif takes then
      remaining, reset = p.algorithm.commit(keys[i], now, p, slack, c[3], c[4], lease)
      if ledgers[i] then
        enter(ledgers[i], now, units[i], p, slack)
      end
    elseif op ~= 'p' or allowed == 0 then
      remaining, reset = p.algorithm.status(keys[i], now, p, c[3], c[4])
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
  return remember(once, deadline, now, op, reply)
end

-- The usual decision as a function of its own: one policy consumed, its id kept in the library's
-- memory rather than in a key (see `recall` in once.lua), with nothing to parse but what it uses.
-- argv: the clock (a deadline on Redis's, empty for none, or a simulated `t<now µs>:<ms>`, as
-- decide takes it), the policy, the epoch the caller knows, and the decision's id: its sender and
-- that sender's count. Answers as decide does, or { -3, now } under another epoch.
local function decide_one(keys, argv)
  local clock, slack, deadline = argv[1], 0, nil
  -- Redis's clock, which the memory always keeps to; a simulated one decides.
  local real, now = redis_now(), nil
  if string.byte(clock, 1) == 116 then -- 't'
    local at, pad = string.match(clock, '^t(%S+):(%S+)$')
    now, slack = tonumber(at), tonumber(pad)
    real = real or now
  elseif not real then
    return { -2 }
  else
    now, deadline = real, tonumber(clock)
  end
  local sender, n = argv[4], argv[5]
  local kept = recall(argv[3], sender, n, real)
  if kept then
    return kept
  end
  if deadline and now > deadline then
    return { -1, now }
  end
  local allowed, remaining, retry, reset, lease = consume_one(keys[1], policy(argv[2]), now, slack)
  if allowed == 1 then
    keep(sender, n, once_ms(deadline, now), real, nil, remaining, retry, reset, now, lease)
  end
  return { allowed, allowed, remaining, retry, reset, now, lease }
end

-- The epoch of the library's memory, which decisions that keep their ids there carry: an integer
-- reply, which every client reads alike. 0 where the caller may not read TIME, whose decisions
-- carry their own clock and id keys; the memory's epoch is left for a caller that may.
local function epoch()
  local now = redis_now()
  return now and tonumber(epoch_at(now)) or 0
end

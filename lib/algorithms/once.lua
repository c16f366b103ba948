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

-- Replies kept in the function library's own memory, in place of id keys. A library's locals live
-- as long as the server's Lua state does, so a decision can carry its id as arguments, and the
-- reply of one that applied is kept here, at no cost to the keyspace, for as long as its id key
-- would have lived. Functions only: a script's body, and these tables, start afresh on every call.
-- The memory is lost when the state is (a restart, FUNCTION FLUSH) and is not where a copy may go
-- next (a replica promoted by a failover). So it has an epoch, and a decision carries the epoch it
-- was sent under: one that finds another epoch may be a copy of a decision this memory never saw
-- applied, and is answered { -3, now } (EPOCH_CHANGED) without applying anything: as a late
-- decision is, by the fallback. The store asks for the epoch when it connects (`epoch`, in
-- decide.lua) and, until it knows it, sends decisions with id keys. The epoch is Redis's clock
-- when the memory began, which no earlier state on this server, and no replica promoted after it,
-- can have begun at.
local EPOCH = nil
-- Replies by sender (a process's random part of its ids, one string per process), then by the
-- sender's count (a number). An id is two arguments so that none is kept as a string: Lua keeps
-- one table of every string alive, and one thousands of entries larger slows every call the
-- server runs, the collector going through it again and again.
-- Kept in generations, each taking the replies of a quarter of a second and let go whole once the
-- last of them may be forgotten: a reply may live a little longer than it must (a copy that comes
-- meanwhile is still answered what the first one decided), and nothing is done per reply to forget
-- it. What Lua holds is kept small and in few objects too: the collector Redis steps every few
-- calls does work in proportion to it, which every call then pays. A lone decision's reply goes
-- into its generation's one flat array, as numbers, at the slot its sender and count point to; a
-- batch's is kept as the table it is. A generation is { index, data, ends (µs), count };
-- GENERATIONS[1] is the newest, begun at GENERATION_START.
local GENERATIONS, GENERATION_START, KEPT_COUNT = {}, 0, 0
local GENERATION_US = 250000
-- Replies at most. A memory that would hold more starts a new epoch, forgetting everything at
-- once: a copy of what it forgot is then answered as late, never applied again. Far more than a
-- server decides in the second a reply is kept (batches keep one entry each).
local KEPT_MAX = 200000

-- This memory's epoch, starting it at `now` (µs) on the first call.
local function epoch_at(now)
  if not EPOCH then
    EPOCH = string.format('%d', now)
  end
  return EPOCH
end

-- Lets go of the oldest generation when all its replies may be forgotten.
local function forget_until(now)
  local last = #GENERATIONS
  local oldest = GENERATIONS[last]
  if oldest and oldest.ends <= now then
    GENERATIONS[last] = nil
    KEPT_COUNT = KEPT_COUNT - oldest.count
  end
end

-- What a decision sent under `epoch` by `sender` as its `n`th answers before anything is
-- decided: the reply kept for it, or { -3, now } when its epoch is not this memory's; nil when it
-- is new.
local function recall(epoch, sender, n, now)
  if epoch ~= epoch_at(now) then
    return { -3, now }
  end
  forget_until(now)
  n = tonumber(n)
  for i = 1, #GENERATIONS do
    local generation = GENERATIONS[i]
    local slots = generation.index[sender]
    local slot = slots and slots[n]
    if slot then
      local data = generation.data
      local first = data[slot]
      if type(first) == 'table' then
        return first
      end
      -- A lone decision that applied: allowed, then its one policy's answers, the time and lease.
      return { 1, 1, first, data[slot + 1], data[slot + 2], data[slot + 3], data[slot + 4] or nil }
    end
  end
  return nil
end

-- Keeps, for `sender`'s `n`th decision and for `keep_ms`, the reply of a batch (`reply`), or of a
-- lone decision that applied: its remaining, retry, reset, time and lease (false for none).
local function keep(sender, n, keep_ms, now, reply, remaining, retry, reset, at, lease)
  if KEPT_COUNT >= KEPT_MAX then
    EPOCH = string.format('%d', now)
    GENERATIONS, GENERATION_START, KEPT_COUNT = {}, 0, 0
    return
  end
  local newest = GENERATIONS[1]
  if not newest or now - GENERATION_START >= GENERATION_US then
    newest = { index = {}, data = {}, ends = 0, count = 0 }
    table.insert(GENERATIONS, 1, newest)
    GENERATION_START = now
  end
  local slots = newest.index[sender]
  if not slots then
    slots = {}
    newest.index[sender] = slots
  end
  local data = newest.data
  local slot = #data + 1
  slots[tonumber(n)] = slot
  if reply then
    data[slot] = reply
  else
    data[slot], data[slot + 1], data[slot + 2] = remaining, retry, reset
    data[slot + 3], data[slot + 4] = at, lease or false
  end
  newest.ends = math.max(newest.ends, now + keep_ms * 1000)
  newest.count = newest.count + 1
  KEPT_COUNT = KEPT_COUNT + 1
end

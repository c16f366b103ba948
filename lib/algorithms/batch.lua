-- Decides several decisions in one call, each exactly as decide(KEYS, ARGV) would alone, in order:
-- a store gathers the decisions that are ready in the same turn of its event loop into one call, so
-- that what a call costs (parsing, dispatch, the reply, reading TIME, a decision id) is paid once
-- for all of them. Their keys share one hash slot (see
-- lib/stores/redis/decisions/decision-batcher.ts).
--
-- argv[1]  how many decisions, N; `<N>i` when keys[1] is the batch's id key (see below); `<N>e`
--          when argv[2..4] are the epoch and the id (sender and count) the batch's reply is kept
--          under in the library's memory instead (Functions only; see `recall` in once.lua). Then, for
--          each decision in turn: how many keys it has, how many arguments, and its arguments, as
--          decide takes them (with no id key of its own). keys: each decision's keys in turn.
-- Reply:   for each decision in turn, how many values its reply has, then its reply as decide
--          answers it; or -1 and the error's message when it failed. { -3, now } when the batch
--          came under another epoch, and nothing was decided. A decision that fails leaves
--          what it wrote, as a failed call does, and the others go on.
--
-- The batch's id key plays for the whole batch the part a decision's plays for it (see `once` in
-- decide.lua): once any decision of the batch has applied something, the reply is kept there
-- for as long as a copy of any of them could arrive, and a copy of the batch (a client's resend, or
-- the store's after a lost reply) is answered with it, applying nothing.

-- Appends the error a decision raised to the batch's reply; returns the reply's new length. It
-- may have written something before it failed, as a lone call may, so its id is kept as long as
-- any.
local function failed(reply, n, error)
  -- redis.call raises a table carrying the server's error; Lua's own errors are strings.
  reply[n + 1], reply[n + 2] = -1, type(error) == 'table' and tostring(error.err) or tostring(error)
  return n + 2, ONCE_WITHOUT_DEADLINE_MS
end

-- One policy consumed on Redis's clock (`time`), the usual case: decide's steps, with the key and
-- arguments read in place. Appends its reply; returns the reply's new length, and how long the
-- batch's id must be kept for it (nil: it applied nothing).
local function consume_in_place(reply, n, key, clock, arg, time)
  local deadline = tonumber(clock)
  if deadline and time > deadline then
    reply[n + 1], reply[n + 2], reply[n + 3] = 2, -1, time
    return n + 3
  end
  local ok, allowed, remaining, retry, reset, lease = pcall(consume_one, key, policy(arg), time, 0)
  if not ok then
    return failed(reply, n, allowed)
  end
  local length = lease and 7 or 6
  reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4] = length, allowed, allowed, remaining
  reply[n + 5], reply[n + 6], reply[n + 7], reply[n + 8] = retry, reset, time, lease
  return n + 1 + length, allowed == 1 and once_ms(deadline, time) or nil
end

-- Any other decision, made by decide over its own keys and arguments; as consume_in_place.
local function decide_apart(reply, n, own_keys, own_args, time)
  local ok, answer = pcall(decide, own_keys, own_args, time)
  if not ok then
    return failed(reply, n, answer)
  end
  local length = #answer
  reply[n + 1] = length
  for i = 1, length do
    reply[n + 1 + i] = answer[i]
  end
  if not applied(string.sub(own_args[1], 1, 1), answer) then
    return n + 1 + length
  end
  -- Its deadline, as decide read it: none for a simulated clock ('t').
  local clock = own_args[2]
  local deadline = string.byte(clock, 1) ~= 116 and tonumber(clock) or nil
  return n + 1 + length, once_ms(deadline, time)
end

local function decide_batch(keys, argv)
  local count, mode = string.match(argv[1], '^(%d+)(%a?)$')
  local once, key_at, arg_at = nil, 0, 2
  if mode == 'i' then
    once, key_at = keys[1], 1
    local first = redis.call('GET', once)
    if first then
      return cmsgpack.unpack(first)
    end
  end
  local time = redis_now()
  local sender, n_sent = nil, nil
  if mode == 'e' then
    -- The epoch and the id in the arguments, the reply kept in the library's memory (see
    -- `recall` in once.lua). A server that refuses TIME answers every decision { -2 } below,
    -- applying nothing, so nothing needs keeping.
    sender, n_sent, arg_at = argv[3], argv[4], 5
    local kept = time and recall(argv[2], sender, n_sent, time)
    if kept then
      return kept
    end
  end
  local reply, n, keep_ms = {}, 0, nil
  for _ = 1, tonumber(count) do
    local key_count, arg_count = tonumber(argv[arg_at]), tonumber(argv[arg_at + 1])
    local clock = argv[arg_at + 3]
    local form = string.byte(clock, 1)
    local keep
    -- One key, a consume, and a clock that is a digit or nothing: a deadline on Redis's, or none.
    local usual = key_count == 1 and arg_count == 3 and argv[arg_at + 2] == 'c'
    if time and usual and (not form or form < 58) then
      n, keep = consume_in_place(reply, n, keys[key_at + 1], clock, argv[arg_at + 4], time)
    else
      local own_keys, own_args = {}, {}
      for i = 1, key_count do
        own_keys[i] = keys[key_at + i]
      end
      for i = 1, arg_count do
        own_args[i] = argv[arg_at + 1 + i]
      end
      n, keep = decide_apart(reply, n, own_keys, own_args, time)
    end
    if keep then
      keep_ms = math.max(keep_ms or 0, keep)
    end
    key_at, arg_at = key_at + key_count, arg_at + 2 + arg_count
  end
  if keep_ms and once then
    redis.call('SET', once, cmsgpack.pack(reply), 'PX', keep_ms)
  elseif keep_ms and sender then
    keep(sender, n_sent, keep_ms, time, reply)
  end
  return reply
end

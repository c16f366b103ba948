-- Token bucket: holds up to `burst` tokens and refills `limit` tokens per period, continuously.
-- Fractions of a token are kept between calls (never floored away), and the refill time moves only
-- when tokens are taken, so frequent callers cannot starve the refill. A denial writes nothing.
-- State: a hash { t = tokens left, at = when they were counted (µs) }.

ALGORITHMS.tb = {}

-- When the bucket is full again, on the same millisecond grid as the key's TTL: from then on the
-- stored state counts as absent, exactly as if the key had already expired.
local function tb_refill_ms(tokens, p)
  return ms((p.burst - tokens) * p.period / p.limit)
end

-- Tokens in the bucket now: what was left plus the refill since, up to full; or, when the key is
-- not a hash, only what stands there (see stand_in).
function ALGORITHMS.tb.open(key, now, p)
  local stored = redis.pcall('HMGET', key, 't', 'at')
  if stored.err then
    return stand_in(key)
  end
  local tokens, at = p.burst, tonumber(stored[2])
  local left = tonumber(stored[1])
  if left and now < at + tb_refill_ms(left, p) * 1000 then
    tokens = math.min(p.burst, left + math.max(now - at, 0) * p.limit / p.period)
  end
  return nil, tokens
end

local function tb_write(key, now, p, slack, tokens)
  redis.call('HSET', key, 't', tokens, 'at', now)
  redis.call('PEXPIRE', key, tb_refill_ms(tokens, p) + slack)
end

-- With `ahead` (µs), a request whose tokens refill within that long is allowed and booked: it
-- takes them now, leaving the bucket in debt, and the retry time says when they will have
-- refilled. Later requests wait behind the debt, in the order they were made.
function ALGORITHMS.tb.check(_, _, p, tokens, _, ahead)
  if p.cost > p.burst then
    return 0, NEVER
  end
  if tokens >= p.cost then
    return 1, 0
  end
  local wait = (p.cost - tokens) * p.period / p.limit
  if ahead and wait <= ahead then
    return 1, us(wait)
  end
  return 0, us(wait)
end

function ALGORITHMS.tb.after(_, p, tokens)
  local left = tokens - p.cost
  return math.max(0, math.floor(left)), tb_refill_ms(left, p)
end

function ALGORITHMS.tb.commit(key, now, p, slack, tokens)
  tb_write(key, now, p, slack, tokens - p.cost)
  return ALGORITHMS.tb.after(now, p, tokens)
end

-- Puts `cost` tokens back, up to a full bucket, which is the same as no key at all.
function ALGORITHMS.tb.refund(key, now, p, slack, tokens)
  tokens = math.min(p.burst, tokens + p.cost)
  if tokens >= p.burst then
    redis.call('DEL', key)
  else
    tb_write(key, now, p, slack, tokens)
  end
end

-- Takes `cost` more tokens without checking the limit (a reservation's usage beyond its estimate,
-- already spent): a bucket that runs dry goes into debt, negative tokens that refill like any
-- others (up to MAX_DEBT of refill), and the key lives until it is full again. A bucket has no
-- windows: `at` is no matter.
function ALGORITHMS.tb.charge(key, now, p, slack, tokens)
  tb_write(key, now, p, slack, math.max(tokens - p.cost, -MAX_DEBT * p.limit / p.period))
end

-- A bucket in debt has nothing remaining, not less.
function ALGORITHMS.tb.status(key, now, p, tokens)
  return math.max(0, math.floor(tokens)), tb_refill_ms(tokens, p)
end

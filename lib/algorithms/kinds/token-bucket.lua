-- Token bucket: holds up to `burst` tokens and refills `limit` tokens per period, continuously.
-- Fractions of a token are kept between calls (never floored away), and the refill time moves only
-- when tokens are taken, so frequent callers cannot starve the refill. A denial writes nothing.
-- State: five doubles packed in one string (struct '<ddddd', 40 bytes, which Redis keeps in the key
-- itself): the tokens left (t), when they were counted (at, µs), and a record that bounds what a
-- late give-back may put back (see refund): how long before `at` the bucket was last full (s, µs),
-- the most it has held since then (h), and when since then it was last given something back (g,
-- µs after it was full, plus 1; 0 if never). One GET reads it and one SET writes it with its TTL.
-- A key written before held the same in a hash { t, at, s, h, g }, read as such until rewritten.

ALGORITHMS.tb = {}

-- When the bucket is full again, on the same millisecond grid as the key's TTL: from then on the
-- stored state counts as absent, exactly as if the key had already expired.
local function tb_refill_ms(tokens, p)
  return ms((p.burst - tokens) * p.period / p.limit)
end

local TB_STATE = '<ddddd'

-- The stored t, at, s, h and g (see above).
local TB_DECODERS = {
  [40] = function(stored)
    local left, at, full_before, high, given_after = struct.unpack(TB_STATE, stored)
    return left, at, full_before, high, given_after
  end,
}
local TB_FIELDS = { 't', 'at', 's', 'h', 'g' }

-- Tokens in the bucket now: what was left plus the refill since, up to full; and, unless it is
-- full, its record { at, s, h, g }. Or, when the key holds something else, only what stands
-- there (see stand_in).
function ALGORITHMS.tb.open(key, now, p)
  local stand, left, at, full_before, high, given_after = read_packed(key, TB_DECODERS, TB_FIELDS)
  if stand then
    return stand
  end
  if left and now < at + tb_refill_ms(left, p) * 1000 then
    local tokens = math.min(p.burst, left + math.max(now - at, 0) * p.limit / p.period)
    if tokens < p.burst then
      -- A key written before the record counts as full at its last write: what it cannot tell,
      -- it gives back nothing of.
      local since = at - (full_before or 0)
      local given = since - 1 + (given_after or 1)
      return nil, tokens, { at, since, high or left, given }
    end
  end
  return nil, p.burst
end

-- Writes `tokens` left now, after `before` (more, for a give-back): the record starts afresh when
-- the bucket was full.
local function tb_write(key, now, p, slack, before, tokens, record)
  local since, high, given = now, tokens, now - 1
  if record then
    since, high, given = record[2], math.max(record[3], before, tokens), record[4]
  end
  if tokens > before then
    given = now
  end
  local state = struct.pack(TB_STATE, tokens, now, now - since, high, given - since + 1)
  redis.call('SET', key, state, 'PX', tb_refill_ms(tokens, p) + slack)
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

function ALGORITHMS.tb.commit(key, now, p, slack, tokens, record)
  tb_write(key, now, p, slack, tokens, tokens - p.cost, record)
  return ALGORITHMS.tb.after(now, p, tokens)
end

-- Puts back `cost` tokens of the request that arrived at `at` (µs; nil: the newest), never more
-- than the bucket would hold had that request never been made, which is never past full. Had it
-- not been made, the bucket would have held `cost` more until the surplus spilt over the top:
-- whenever the bucket since then held `h`, that surplus was at most burst - h. So the give-back
-- is capped by what the bucket has lacked throughout since the request: burst less the most it
-- has held since (now included). The record knows that exactly when nothing was given back since
-- the request, nor written after its moment: what was taken at that moment only lowered the
-- bucket, so the most it has held since is what it holds now. Otherwise it takes the most the
-- bucket has held since it was last full (more than since the request, so never too much); and a
-- bucket full since the request gives back nothing, as the tokens would have spilt over by then.
-- A full bucket is the same as no key.
function ALGORITHMS.tb.refund(key, now, p, slack, tokens, record, at)
  local high = tokens
  if record and at and (at < record[1] or at <= record[4]) then
    if at < record[2] then
      return
    end
    high = math.max(record[3], tokens)
  end
  local left = math.min(p.burst - (high - tokens), tokens + p.cost)
  if left >= p.burst then
    redis.call('DEL', key)
  else
    tb_write(key, now, p, slack, tokens, left, record)
  end
end

-- Takes `cost` more tokens without checking the limit (a reservation's usage beyond its estimate,
-- already spent): a bucket that runs dry goes into debt, negative tokens that refill like any
-- others (up to MAX_DEBT of refill), and the key lives until it is full again. A bucket has no
-- windows: `at` is no matter.
function ALGORITHMS.tb.charge(key, now, p, slack, tokens, record)
  local left = math.max(tokens - p.cost, -MAX_DEBT * p.limit / p.period)
  tb_write(key, now, p, slack, tokens, left, record)
end

-- A bucket in debt has nothing remaining, not less.
function ALGORITHMS.tb.status(key, now, p, tokens)
  return math.max(0, math.floor(tokens)), tb_refill_ms(tokens, p)
end

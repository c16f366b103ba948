-- The ledgers of the policies that count only some outcomes (`count: 'failures'` or
-- `'successes'`), for decide.lua; the memory twin is ledger.ts. A request such a policy lets
-- through is counted at once, so that a burst cannot pass before the first outcome is known, and
-- given back or kept once it is. Meanwhile it is in the ledger, and a request that only those in
-- flight keep out is neither locked out nor turned away for good: it may ask again once they end.
--
-- The ledger of a policy that counts only some outcomes: a hash of the requests it counted whose
-- outcome is not known yet, by arrival (µs) to their units. A request whose outcome never came (its
-- instance died) is dropped once its arrival is a whole period old: by then its count has left the
-- window too. Bounded: only requests the policy let through are there, and each holds some of it.
local function horizon(p)
  return p.period or p.bounds[#p.bounds]
end

-- The units in flight on a ledger, dropping the requests too old to matter.
local function in_flight(ledger, now, p)
  local entries = redis.call('HGETALL', ledger)
  local units, oldest = 0, now - horizon(p)
  for j = 1, #entries, 2 do
    if tonumber(entries[j]) <= oldest then
      redis.call('HDEL', ledger, entries[j])
    else
      units = units + tonumber(entries[j + 1])
    end
  end
  return units
end

-- Counts a request on a ledger (`units` > 0), or takes it out once its outcome is known (< 0).
local function enter(ledger, arrival, units, p, slack)
  if units > 0 then
    redis.call('HINCRBY', ledger, arrival, units)
    redis.call('PEXPIRE', ledger, ms(horizon(p)) + slack)
  elseif redis.call('HINCRBY', ledger, arrival, units) <= 0 then
    redis.call('HDEL', ledger, arrival)
  end
end

-- `;<u1>,<u2>,...` at the end of argv[1], as numbers.
local function units_of(list)
  local units = {}
  for u in string.gmatch(list, '[^,]+') do
    units[#units + 1] = tonumber(u)
  end
  return units
end

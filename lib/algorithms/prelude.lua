-- Shared by every algorithm script. Each algorithm adds { check, commit, status } to ALGORITHMS.
-- Times are integer microseconds; replies are integers (Lua floats would be truncated anyway).
local ALGORITHMS = {}

-- Microseconds to whole milliseconds, rounded up: a client told to wait never waits too little.
local function ms(us)
  return math.ceil(us / 1000)
end

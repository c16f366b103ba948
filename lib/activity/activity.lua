-- What the instances of one key prefix share for the console: a hash per minute,
-- `<prefix>:{console}:<minute>`, a field per instance holding that instance's report of the minute
-- (JSON, which only the caller reads). Every key has the same hash tag, so one slot on a cluster.
--
-- ARGV[1] the operation.
--   share: KEYS[1] the minute's hash, ARGV[2] the instance, ARGV[3] its report, ARGV[4] how long
--          the hash lives after this write, in ms. Replies 1.
--   read:  every KEYS a minute's hash. Replies, per key in order, its fields and values.

local op = ARGV[1]
if op == 'share' then
  redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  return 1
end
local minutes = {}
for i, key in ipairs(KEYS) do
  minutes[i] = redis.call('HGETALL', key)
end
return minutes

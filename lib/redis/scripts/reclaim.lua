--[[
  Reclaim expired leases: requests leased by crawlers that died (or stalled past the deadline) go back to
  their queues, unchanged, for another crawler.

  KEYS[1..18]  partition keys (includes/frontier.lua)
  ARGV[1..5]   common frontier arguments
  ARGV[6]      at most this many per call

  Returns {reclaimed, remaining_expired}: how many went back, and whether more expired leases remain (1|0).
  Cost: O(log n) per reclaimed lease.
]]
--- @include "frontier"

local limit = tonumber(ARGV[6])
local expired = redis.call('ZRANGEBYSCORE', K.leases, '-inf', NOW, 'LIMIT', 0, limit)
local n = 0
for _, m in ipairs(expired) do
  redis.call('ZREM', K.leases, m)
  n = n + requeue(m, parse_member(m))
end
local more = 0
if #expired == limit and #redis.call('ZRANGEBYSCORE', K.leases, '-inf', NOW, 'LIMIT', 0, 1) > 0 then more = 1 end
return {n, more}

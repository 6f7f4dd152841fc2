--[[
  Reclaim expired leases: requests leased by crawlers that died (or stalled past the deadline) go back to
  their queues for another crawler, in their place, with one more retry counted (the crawler gives up a
  request whose retries exceed its limit without fetching it).

  KEYS[1..19]  partition keys (includes/frontier.lua)
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
  -- Counted: the request comes back with retries + 1 (same priority and FIFO place), so a page that kills or
  -- stalls every crawler that takes it is given up (a success:false page) once its retries run out, instead of
  -- taking down crawler after crawler forever.
  local nm = reclaimed_member(parse_member(m), 1)
  n = n + requeue(nm, parse_member(nm))
end
local more = 0
if #expired == limit and #redis.call('ZRANGEBYSCORE', K.leases, '-inf', NOW, 'LIMIT', 0, 1) > 0 then more = 1 end
return {n, more}

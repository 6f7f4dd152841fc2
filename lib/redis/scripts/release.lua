--[[
  Release leased requests back to their queues unchanged (they keep their FIFO place): a crawler shutting
  down gives back what it did not fetch. No throttle hit is refunded.

  KEYS[1..19]  partition keys (includes/frontier.lua)
  ARGV[1..5]   common frontier arguments
  ARGV[6..]    members (lease handles)

  Returns the number released (unknown leases and requests of stopped crawls are not counted).
  Cost: O(log n) per member.
]]
--- @include "frontier"

local n = 0
for i = 6, #ARGV do
  local m = ARGV[i]
  if redis.call('ZREM', K.leases, m) == 1 then n = n + requeue(m, parse_member(m)) end
end
return n

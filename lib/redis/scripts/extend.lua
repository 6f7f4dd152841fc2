--[[
  Extend leases their crawler still holds: a crawler whose page waits on its delivery (Kafka slow or down, an ack
  kept through a Redis failure) or on a slow site keeps its leases alive, so reclaim, which counts a retry, takes
  back only the leases of crawlers that died or stalled.

  KEYS[1..18]  partition keys (includes/frontier.lua)
  ARGV[1..5]   common frontier arguments
  ARGV[6]      lease duration (ms): each lease held gets the deadline now + this
  ARGV[7..]    members (lease handles)

  Returns the number extended. A lease no longer held (acked, released, or reclaimed) is left as it is: ZADD XX.
  Cost: O(log n) per member.
]]
--- @include "frontier"

local deadline = NOW + tonumber(ARGV[6])
local n = 0
for i = 7, #ARGV do
  n = n + redis.call('ZADD', K.leases, 'XX', 'CH', deadline, ARGV[i])
end
return n

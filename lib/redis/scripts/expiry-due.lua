--[[
  The crawls whose `expires` has passed, for the expiry function to stop one by one.

  KEYS[1..17]  partition keys (includes/frontier.lua)
  ARGV[1..5]   common frontier arguments
  ARGV[6]      at most this many

  Returns a flat list crawl ref, settings JSON, ... .
  Cost: O(log n + due crawls).
]]
--- @include "frontier"

local out = {}
for _, ref in ipairs(redis.call('ZRANGEBYSCORE', K.expiry, '-inf', math.floor(NOW / 1000), 'LIMIT', 0, tonumber(ARGV[6]))) do
  out[#out + 1] = ref
  out[#out + 1] = redis.call('HGET', K.settings, ref) or ''
end
return out

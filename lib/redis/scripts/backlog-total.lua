--[[
  A spider type's backlog in one partition, from kept counters (what stats and the dashboard read on every run):
  the queued requests in total (K.qtotal, kept by every script that changes K.dcount) and how many domains have
  any (HLEN of K.dcount). A partition written before K.qtotal existed gets it here, added up from K.dcount once;
  from then on the scripts keep it (includes/frontier.lua total_kept).

  KEYS[1..19]  partition keys (includes/frontier.lua)
  ARGV[1..5]   common frontier arguments

  Returns {total, domains}.
  Cost: O(1); O(domains) once per partition written before the total was kept.
]]
--- @include "frontier"

local total = redis.call('GET', K.qtotal)
if not total then
  total = 0
  for _, n in ipairs(redis.call('HVALS', K.dcount)) do total = total + tonumber(n) end
  redis.call('SET', K.qtotal, total)
end
return {tonumber(total), redis.call('HLEN', K.dcount)}

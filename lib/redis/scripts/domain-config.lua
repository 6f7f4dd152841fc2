--[[
  Change a domain's throttle or blacklist in one partition; the domain is rescheduled at once, so the
  change applies to every crawler at its next lease.

  KEYS[1..19]  partition keys (includes/frontier.lua)
  ARGV[1..5]   common frontier arguments
  ARGV[6]      action: domain-update | domain-remove | blacklist-update | blacklist-remove
  ARGV[7]      domain
  ARGV[8..10]  hits, window (s), scale (domain-update only)

  Returns 1.
  Cost: O(log n).
]]
--- @include "frontier"

local action, domain = ARGV[6], ARGV[7]
if action == 'domain-update' then
  redis.call('HSET', K.dcfg, domain, ARGV[8] .. ',' .. ARGV[9] .. ',' .. ARGV[10])
elseif action == 'domain-remove' then
  redis.call('HDEL', K.dcfg, domain)
elseif action == 'blacklist-update' then
  redis.call('SADD', K.black, domain)
elseif action == 'blacklist-remove' then
  redis.call('SREM', K.black, domain)
else
  return redis.error_reply('ERR unknown domain action ' .. tostring(action))
end
schedule(domain)
return 1

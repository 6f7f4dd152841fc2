--[[
  URL frontier: one frontier-wide setting in one partition (lib/redis/url-frontier/settings.ts writes each change to
  every partition): the state's `active` or `delay` (SetActive, SetDelay without a key), a domain's throttle override
  (the Kafka API's domain-update / domain-remove) or its blacklist entry (blacklist-update / blacklist-remove).

  KEYS[1..6]   the frontier-wide keys (includes/uf.lua): the state, dcfg and black are written
  ARGV[1]      what: 'state' (field ARGV[2] of the state set to ARGV[3]), 'dcfg' (domain ARGV[2]'s override set to
               ARGV[3], removed when ''), 'black' (domain ARGV[2] blacklisted when ARGV[3] is '1', else no more)
  ARGV[2]      the state field or the domain
  ARGV[3]      the value

  Returns 1.
  Answers the error `UFMOVE <message>` and writes nothing while the frontier is fenced (includes/uf.lua fence()).
  Cost: O(1).
]]
--- @include "uf"

local fenced = fence()
if fenced then return redis.error_reply(FENCE_ERROR .. ' ' .. fenced) end

local what, name, value = ARGV[1], ARGV[2], ARGV[3]
if what == 'state' then
  redis.call('HSET', K.state, name, value)
elseif what == 'dcfg' then
  if value == '' then redis.call('HDEL', K.dcfg, name) else redis.call('HSET', K.dcfg, name, value) end
elseif what == 'black' then
  if value == '1' then redis.call('SADD', K.black, name) else redis.call('SREM', K.black, name) end
else
  return redis.error_reply('ERR uf-settings: unknown setting ' .. what)
end
return 1

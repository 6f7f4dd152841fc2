--[[
  Stop (or expire) a crawl: its queued requests are purged lazily (counted and settled now, dropped when a
  lease meets them), its counters, settings and dupefilter removed, and its crawl key blacklisted for a
  while so late children are refused. Leased requests may finish; their acks find the crawl gone.

  KEYS[1..17]  partition keys (includes/frontier.lua)
  KEYS[18]     the crawl's dupefilter SET
  ARGV[1..5]   common frontier arguments
  ARGV[6]      crawl key
  ARGV[7]      how long the crawl key stays stopped (ms)

  Returns {purged, settings JSON or ''}: how many queued requests were purged, and the crawl's settings.
  Cost: O(domains x priorities of the crawl), never O(queue).
]]
--- @include "frontier"

local ckey = ARGV[6]
redis.call('ZREMRANGEBYSCORE', K.stopped, '-inf', NOW)
redis.call('ZADD', K.stopped, NOW + tonumber(ARGV[7]), ckey)
redis.call('DEL', KEYS[18])
local ref = redis.call('HGET', K.refs, ckey)
if not ref then return {0, ''} end

local purged = 0
local lo, hi = '[' .. ref .. '\0', '(' .. ref .. '\1'
for _, f in ipairs(redis.call('ZRANGEBYLEX', K.cidx, lo, hi)) do
  local n = tonumber(redis.call('HGET', K.counts, f) or 0)
  local domain, kind = string.match(f, '^[^%z]*%z([^%z]*)%z(.*)$')
  if kind ~= 'cap' and n > 0 then
    purged = purged + n
    if redis.call('HINCRBY', K.dcount, domain, -n) <= 0 then redis.call('HDEL', K.dcount, domain) end
  end
  redis.call('HDEL', K.counts, f)
end
redis.call('ZREMRANGEBYLEX', K.cidx, lo, hi)
for _, s in ipairs({'q', 'l', 'done', 'fail', 'maxp'}) do redis.call('HDEL', K.counts, ref .. '\0' .. s) end

local settings = redis.call('HGET', K.settings, ref) or ''
if settings ~= '' then redis.call('ZREM', K.apps, cjson.decode(settings).appid .. '\0' .. ref) end
redis.call('HDEL', K.settings, ref)
redis.call('HDEL', K.refs, ckey)
redis.call('ZREM', K.expiry, ref)
return {purged, settings}

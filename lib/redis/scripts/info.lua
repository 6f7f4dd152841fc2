--[[
  Queue info for crawls, from counters (never a queue scan).

  KEYS[1..17]  partition keys (includes/frontier.lua)
  ARGV[1..5]   common frontier arguments
  ARGV[6]      'crawl' (ARGV[7] = crawl key) or 'app' (ARGV[7] = appid)

  Returns a list of crawls, each {settings JSON, queued, leased, done, failed, entries}, where entries is a
  flat list domain, priority, count, ... for every domain/priority with queued requests.
  Cost: O(domains x priorities) per crawl.
]]
--- @include "frontier"

local function crawl_info(ref)
  local settings = redis.call('HGET', K.settings, ref)
  if not settings then return nil end
  local entries = {}
  for _, f in ipairs(redis.call('ZRANGEBYLEX', K.cidx, '[' .. ref .. '\0', '(' .. ref .. '\1')) do
    local domain, kind = string.match(f, '^[^%z]*%z([^%z]*)%z(.*)$')
    if kind ~= 'cap' then
      entries[#entries + 1] = domain
      entries[#entries + 1] = P0 - tonumber(kind)
      entries[#entries + 1] = tonumber(redis.call('HGET', K.counts, f) or 0)
    end
  end
  local c = redis.call('HMGET', K.counts, ref .. '\0q', ref .. '\0l', ref .. '\0done', ref .. '\0fail')
  return {settings, tonumber(c[1] or 0), tonumber(c[2] or 0), tonumber(c[3] or 0), tonumber(c[4] or 0), entries}
end

local out = {}
if ARGV[6] == 'crawl' then
  local ref = redis.call('HGET', K.refs, ARGV[7])
  if ref then out[1] = crawl_info(ref) end
else
  local appid = ARGV[7]
  for _, e in ipairs(redis.call('ZRANGEBYLEX', K.apps, '[' .. appid .. '\0', '(' .. appid .. '\1')) do
    local info = crawl_info(string.sub(e, #appid + 2))
    if info then out[#out + 1] = info end
  end
end
return out

--[[
  The crawls of a spider type whose `expires` has passed, for the expiry function to stop one by one.
  (Spider types that share a partition share its expiry index, so others' crawls are skipped.)

  KEYS[1..19]  partition keys (includes/frontier.lua)
  ARGV[1..5]   common frontier arguments
  ARGV[6]      at most this many
  ARGV[7]      spider type

  Returns a flat list crawl ref, settings JSON, ... .
  Cost: O(log n + due crawls).
]]
--- @include "frontier"

local limit, spider = tonumber(ARGV[6]), ARGV[7]
local out = {}
local offset = 0
while #out < 2 * limit do
  local due = redis.call('ZRANGEBYSCORE', K.expiry, '-inf', math.floor(NOW / 1000), 'LIMIT', offset, limit)
  for _, ref in ipairs(due) do
    local record = crawl_record(ref)
    if record and record_spider(record) == spider and #out < 2 * limit then
      out[#out + 1] = ref
      out[#out + 1] = record_settings(record)
    end
  end
  if #due < limit then break end
  offset = offset + limit
end
return out

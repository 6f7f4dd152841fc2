--[[
  URL frontier: store URL items into one queue (PutURLs, PutDiscovered). A discovered URL is added only if the
  queue does not know it (active or completed); a known URL always overwrites metadata and schedule, releases
  its hold, and with date 0 becomes completed. The creation date is set on first store only; `created` holds
  '<creation date>\t<metadata JSON>' per URL (just the date when there is no metadata). URLs are members
  (lib/url-frontier/store.ts urlMember: the queue's host prefix cut off).

  KEYS[1..12]  queue keys (includes/uf.lua)
  ARGV[1]      crawl ID
  ARGV[2]      queue key
  ARGV[3]      now (epoch s)
  ARGV[4]      the queue key's registrable domain (stored with a new queue, for domain overrides)
  ARGV[5..]    quadruples: kind ('d' discovered, 'k' known), URL, next-fetch date (s; known only, 0 = completed),
               metadata JSON

  Returns one status per item: 0 stored (OK), 1 already known (SKIPPED). Items of one call are applied in order,
  so a duplicate inside a call is SKIPPED.
  Cost: O(log n) per item.
]]
--- @include "uf"

local now = tonumber(ARGV[3])
local domain = ARGV[4]
local out = {}
local i = 5
while i + 3 <= #ARGV do
  local kind, url, date, meta = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), ARGV[i + 3]
  local old = redis.call('HGET', K.created, url)
  if kind == 'd' then
    if old then
      out[#out + 1] = 1
    else
      ensure_queue(domain)
      redis.call('HSET', K.created, url, created_value(now, meta))
      redis.call('ZADD', K.sched, now, url)
      out[#out + 1] = 0
    end
  else
    ensure_queue(domain)
    local created = now
    if old then created = split_created(old) end
    redis.call('HSET', K.created, url, created_value(created, meta))
    redis.call('ZREM', K.held, url)
    redis.call('HDEL', K.hdate, url)
    if date == 0 then
      redis.call('ZREM', K.sched, url)
      redis.call('SADD', K.done, url)
    else
      redis.call('SREM', K.done, url)
      redis.call('ZADD', K.sched, date, url)
    end
    out[#out + 1] = 0
  end
  i = i + 4
end
return out

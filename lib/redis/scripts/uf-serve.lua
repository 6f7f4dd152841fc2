--[[
  URL frontier: serve one queue for GetURLs. Releases expired holds, then checks that the queue is not blocked,
  its domain not blacklisted (the Kafka API's blacklist), under its crawl limit, past its politeness delay since
  it last produced, and below max URLs in flight; takes the due URLs (date <= now, not held; by date then URL),
  holds them until `held until`, and stamps lastProduced if any was taken. Atomic, so two servers never hand out
  the same held URL.
  A domain throttle override (`hits` per `window` s, times `scale`) caps the queue at floor(hits * scale) URLs
  (at least 1) per serve and at least `window` s between serves, so no window holds more than that many URLs
  handed out. (Max URLs in flight stays the client's `max`.)

  KEYS[1..12]  queue keys (includes/uf.lua)
  ARGV[1]      crawl ID
  ARGV[2]      queue key
  ARGV[3]      now (epoch ms)
  ARGV[4]      max URLs (0: no limit)
  ARGV[5]      held until (epoch ms)

  Returns one string: per URL served, `<byte length>:<member><byte length>:<metadata JSON, '' for none>` (one
  bulk reply instead of two per URL; empty when the queue is not eligible).
  Cost: O(expired holds × log n + served × log n), in a handful of variadic calls per 500 URLs.
]]
--- @include "uf"

local now = tonumber(ARGV[3])
local max = tonumber(ARGV[4])
local until_ms = tonumber(ARGV[5])
if not redis.call('ZSCORE', K.queues, QKEY) then return {} end
release_expired(now)
local info = redis.call('HMGET', K.info, 'blocked', 'limit', 'last', 'delay')
local blocked, limit, last, delay = tonumber(info[1]), tonumber(info[2]), tonumber(info[3]), tonumber(info[4])
if blocked and blocked >= now then return {} end
local domain = redis.call('HGET', K.info, 'dom') or QKEY
if redis.call('SISMEMBER', K.black, domain) == 1 then return {} end
if limit and limit > 0 and redis.call('SCARD', K.done) >= limit then return {} end
if not delay then delay = tonumber(redis.call('HGET', K.state, 'delay') or '1') end
-- take: how many URLs this serve may hand out (max, or the domain override's cap when smaller)
local take = max
local cfg = redis.call('HGET', K.dcfg, domain)
if cfg then
  local hits, window, scale = string.match(cfg, '^([^,]*),([^,]*),([^,]*)$')
  hits, window, scale = tonumber(hits), tonumber(window), tonumber(scale)
  if hits and window and scale then
    local cap = math.max(1, math.floor(hits * scale))
    if take == 0 or take > cap then take = cap end
    if window > delay then delay = window end
  end
end
if last and now <= last + delay * 1000 then return {} end
if max > 0 and redis.call('ZCOUNT', K.held, '(' .. now, '+inf') >= max then return {} end
local due
if take > 0 then
  due = redis.call('ZRANGEBYSCORE', K.sched, '-inf', math.floor(now / 1000), 'WITHSCORES', 'LIMIT', 0, take)
else
  due = redis.call('ZRANGEBYSCORE', K.sched, '-inf', math.floor(now / 1000), 'WITHSCORES')
end
local out = {}
-- In chunks of at most 500 URLs, one variadic call per structure (unpack's stack is bounded).
for from = 1, #due, 1000 do
  local to = math.min(#due, from + 999)
  local urls, held, hdate = {}, {}, {}
  for j = from, to, 2 do
    local url, date = due[j], due[j + 1]
    urls[#urls + 1] = url
    held[#held + 1] = until_ms
    held[#held + 1] = url
    hdate[#hdate + 1] = url
    hdate[#hdate + 1] = date
  end
  redis.call('ZREM', K.sched, unpack(urls))
  redis.call('ZADD', K.held, unpack(held))
  redis.call('HSET', K.hdate, unpack(hdate))
  local created = redis.call('HMGET', K.created, unpack(urls))
  for j = 1, #urls do
    local meta = ''
    if created[j] then
      local _, m = split_created(created[j])
      if m ~= '{}' then meta = m end
    end
    out[#out + 1] = #urls[j] .. ':' .. urls[j] .. #meta .. ':' .. meta
  end
end
if #out > 0 then redis.call('HSET', K.info, 'last', now) end
return table.concat(out)

--[[
  URL frontier: releases holds that ended (GetURLs runs it first, and GetStats: lib/redis/url-frontier/holds.ts), for
  the hold members the caller read from the frontier's `holds` (those ended by now, the earliest first), grouped by
  queue. For each URL whose hold in its queue's info ended: the URL goes back into the queue's schedule at its date,
  its field and `holds` entry go, the queue's count of held URLs drops, and the queue is due again by its earliest
  scheduled URL (includes/uf.lua wake_queue). An entry whose info field is gone (its URL completed or purged, its
  queue deleted) is dropped; one held again since (a later end in its field) is left. So two calls over the same
  members, from two servers, release each hold once.

  KEYS[1..6]   the frontier-wide keys, then per crawl its group: its two keys and its queues' six keys each, in
               ARGV order (includes/uf.lua; keys.ts urlFrontierGroupsKeys)
  ARGV[1]      now (epoch ms)
  ARGV[2..]    per crawl, in KEYS order: crawl ID, queue count, then per queue: queue key, URL count m, then m URL
               members

  Returns the number of members done with: holds released and entries dropped.
  Answers the error `UFMOVE <message>` and writes nothing while the frontier is fenced (includes/uf.lua fence()).
  Cost: O(m × log n) per queue, in a few variadic calls, and O(log h) per member.
]]
--- @include "uf"

local fenced = fence()
if fenced then return redis.error_reply(FENCE_ERROR .. ' ' .. fenced) end

local now = tonumber(ARGV[1])
local released = 0
local drop = {}
local a = 2
local k = 7 -- the current crawl's group in KEYS
while a <= #ARGV do
  use_crawl(k, ARGV[a])
  local queues = tonumber(ARGV[a + 1])
  a = a + 2
  for q = 1, queues do
    use_queue(q, ARGV[a])
    local m = tonumber(ARGV[a + 1])
    local fields = {}
    for j = 1, m do fields[j] = HOLD_FIELD .. ARGV[a + 1 + j] end
    local values = redis.call('HMGET', K.info, unpack(fields))
    local sched, gone = {}, {}
    for j = 1, m do
      local url, value = ARGV[a + 1 + j], values[j]
      if value then
        local comma = string.find(value, ',', 1, true)
        if tonumber(string.sub(value, comma + 1)) <= now then
          sched[#sched + 1] = string.sub(value, 1, comma - 1)
          sched[#sched + 1] = url
          gone[#gone + 1] = fields[j]
          drop[#drop + 1] = HPREFIX .. url
        end
      else
        drop[#drop + 1] = HPREFIX .. url
      end
    end
    if #gone > 0 then
      redis.call('ZADD', K.sched, unpack(sched))
      redis.call('HDEL', K.info, unpack(gone))
      redis.call('HINCRBY', K.info, 'held', -#gone)
      released = released + #gone
      wake_queue()
    end
    a = a + 2 + m
  end
  k = k + 2 + 6 * queues
end
for from = 1, #drop, 500 do redis.call('ZREM', K.holds, unpack(drop, from, math.min(#drop, from + 499))) end
return released + #drop

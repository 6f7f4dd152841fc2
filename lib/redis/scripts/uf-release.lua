--[[
  URL frontier: releases holds that ended (GetURLs runs it first, and GetStats: lib/redis/url-frontier/holds.ts), for
  the `holds` entries the caller read as ended by now: the first members of buckets (the holds GetURLs made, by the
  time they end at) and single hold members (holds moved from an older version's keys or by a reshard). For each
  URL whose hold in its queue's info ended: the URL goes back into the queue's schedule at its date, its field goes,
  the queue's count of held URLs drops, and the queue is due again by its earliest scheduled URL (includes/uf.lua
  wake_queue). A member whose info field is gone (its URL completed or purged, its queue deleted) or ends later (held
  again since, with an entry of its own) is only dropped. Then the members read leave their bucket (if it still starts
  with them: a second call over the same members, from another server, releases nothing twice and trims nothing
  twice), a bucket left empty leaves `holds`, and so do the single members.

  KEYS[1..6]   the frontier-wide keys (includes/uf.lua)
  KEYS[7..]    the buckets read (ARGV order; keys.ts urlFrontierHoldBucket), then per crawl its group: its two keys
               and its queues' six keys each, in ARGV order (includes/uf.lua; keys.ts urlFrontierReleaseKeys)
  ARGV[1]      now (epoch ms)
  ARGV[2]      the number of buckets b
  ARGV[3..]    per bucket: its end (epoch ms), the number m of members read from its start, and those m hold
               members; then the number of single hold members s, and those s members; then per crawl, in KEYS
               order: crawl ID, queue count, then its queue keys (the queues the members name)

  Returns the number of members and buckets done with.
  Answers the error `UFMOVE <message>` and writes nothing while the frontier is fenced (includes/uf.lua fence()).
  Cost: O(log n) per member and O(m) per bucket, in a few variadic calls per queue.
]]
--- @include "uf"

local fenced = fence()
if fenced then return redis.error_reply(FENCE_ERROR .. ' ' .. fenced) end

local now = tonumber(ARGV[1])
local done = 0
local a = 3
local buckets = {}
-- Every member to look at: from the buckets, then the single ones.
local members = {}
for b = 1, tonumber(ARGV[2]) do
  local m = tonumber(ARGV[a + 1])
  buckets[b] = { end_ms = ARGV[a], from = a + 2, m = m }
  for j = 1, m do members[#members + 1] = ARGV[a + 1 + j] end
  a = a + 2 + m
end
local singles = {}
for j = 1, tonumber(ARGV[a]) do
  singles[j] = ARGV[a + j]
  members[#members + 1] = singles[j]
end
a = a + 1 + #singles

-- The queues named, by their members' prefix (includes/uf.lua hold_prefix): crawl ID, key, group and place in it.
local queues = {}
local k = 7 + #buckets
while a <= #ARGV do
  local crawl, n = ARGV[a], tonumber(ARGV[a + 1])
  for q = 1, n do
    local key = ARGV[a + 1 + q]
    queues[hold_prefix(crawl, key)] = { crawl = crawl, key = key, at = k, i = q, urls = {} }
  end
  a = a + 2 + n
  k = k + 2 + 6 * n
end

-- A hold member's prefix (its queue's) and URL member, or nil for a malformed one.
local function split(member)
  local c1 = string.find(member, ':', 1, true)
  local n1 = c1 and tonumber(string.sub(member, 1, c1 - 1))
  if not n1 then return nil end
  local c2 = string.find(member, ':', c1 + n1 + 1, true)
  local n2 = c2 and tonumber(string.sub(member, c1 + n1 + 1, c2 - 1))
  if not n2 then return nil end
  return string.sub(member, 1, c2 + n2), string.sub(member, c2 + n2 + 1)
end

local order = {}
for j = 1, #members do
  local prefix, url = split(members[j])
  local q = prefix and queues[prefix]
  if q then
    if #q.urls == 0 then order[#order + 1] = q end
    q.urls[#q.urls + 1] = url
  end
end

for _, q in ipairs(order) do
  use_crawl(q.at, q.crawl)
  use_queue(q.i, q.key)
  local fields = {}
  for j = 1, #q.urls do fields[j] = HOLD_FIELD .. q.urls[j] end
  local values = redis.call('HMGET', K.info, unpack(fields))
  local sched, gone, seen = {}, {}, {}
  for j = 1, #q.urls do
    local value = values[j]
    local comma = value and string.find(value, ',', 1, true)
    -- the same URL twice among the members: released once
    if comma and tonumber(string.sub(value, comma + 1)) <= now and not seen[fields[j]] then
      sched[#sched + 1] = string.sub(value, 1, comma - 1)
      sched[#sched + 1] = q.urls[j]
      seen[fields[j]] = true
      gone[#gone + 1] = fields[j]
    end
  end
  if #gone > 0 then
    redis.call('ZADD', K.sched, unpack(sched))
    redis.call('HDEL', K.info, unpack(gone))
    redis.call('HINCRBY', K.info, 'held', -#gone)
    wake_queue()
  end
end
done = done + #members

for b, bucket in ipairs(buckets) do
  local key = KEYS[6 + b]
  if bucket.m > 0 then
    local head = redis.call('LRANGE', key, 0, bucket.m - 1)
    local same = #head == bucket.m
    for j = 1, #head do
      if head[j] ~= ARGV[bucket.from + j - 1] then
        same = false
        break
      end
    end
    if same then redis.call('LTRIM', key, bucket.m, -1) end
  end
  if redis.call('EXISTS', key) == 0 then
    redis.call('ZREM', K.holds, 'b:' .. bucket.end_ms)
    done = done + 1
  end
end
for from = 1, #singles, 500 do redis.call('ZREM', K.holds, unpack(singles, from, math.min(#singles, from + 499))) end
return done

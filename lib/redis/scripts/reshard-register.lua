--[[
  Register crawls in a partition of the new layout during `frontier reshard` (lib/redis/reshard.ts), before their
  requests are moved there: each crawl gets a record (a ref, its settings, expiry and app index entries, its page
  cap) as a seed registers it (includes/enqueue.lua `register`), or keeps the one it has (a move run again). Its done
  and failed counters are set to what the caller gives (the old layout's totals in one partition, 0 in the others),
  so a crawl's sums over the new partitions are its totals. A crawl with nothing queued here is in K.finished with
  the given score, as a partition where it completed would be: swept a dupefilter TTL after it is complete
  everywhere (lib/redis/partition-sums.ts holds it while it has work elsewhere); reshard-put.lua takes it out when
  it moves a request of the crawl here.

  KEYS[1..19]  partition keys (includes/frontier.lua)
  KEYS[19+i]   dupefilter HASH of the i-th crawl: one left under the name of a crawl that is registered here only
               now is stale (as enqueue.lua treats it) and is deleted before the old layout's is copied in
  ARGV[1..5]   common frontier arguments
  ARGV[6]      sequence floor: K.seq is raised to at least this, so requests queued after the move sort after the
               moved ones (which keep their sequence numbers) and never share one with them
  ARGV[7..]    groups of 10, one per crawl: crawl key, appid, spider type, settings JSON, first sequence number (8 base-62
               digits, as records hold it: a moved request of the crawl is alive if its number is not below it), expires (epoch s,
               0 = never), page cap (0 = none), done, failed, K.finished score (epoch ms) when nothing is queued here

  Returns how many crawls were registered here now (the others were already).
  Cost: O(log n) per crawl.
]]
--- @include "frontier"
--- @include "dupefilter"
--- @include "enqueue"

local floor = tonumber(ARGV[6])
if tonumber(redis.call('GET', K.seq) or 0) < floor then redis.call('SET', K.seq, floor) end

-- A counter set to n (absent when 0, as the scripts that count leave it).
local function set_count(field, n)
  if tonumber(n) > 0 then redis.call('HSET', K.counts, field, n) else redis.call('HDEL', K.counts, field) end
end

local registered = 0
local i = 0
for a = 7, #ARGV, 10 do
  i = i + 1
  local c = {
    key = ARGV[a], appid = ARGV[a + 1], settings = ARGV[a + 3], expires = tonumber(ARGV[a + 5]),
    cap = tonumber(ARGV[a + 6]),
  }
  local spider, first = ARGV[a + 2], ARGV[a + 4]
  local ref = redis.call('HGET', K.refs, c.key)
  if ref then
    -- Registered before: by an earlier run of the move, or by new work. Its first sequence number must not make
    -- the moved requests look older than the crawl.
    local record = crawl_record(ref)
    if record and string.sub(record, 17, 24) > first then
      redis.call('HSET', K.settings, ref, record_key(record) .. first .. string.sub(record, 25))
    end
  else
    redis.call('UNLINK', KEYS[19 + i])
    register(c, b62_num(first), spider)
    ref = c.ref
    registered = registered + 1
  end
  set_count(ref .. '\0done', ARGV[a + 7])
  set_count(ref .. '\0fail', ARGV[a + 8])
  if tonumber(redis.call('HGET', K.counts, ref .. '\0q') or 0) > 0 then
    redis.call('ZREM', K.finished, ref)
  else
    redis.call('ZADD', K.finished, ARGV[a + 9], ref)
  end
end
return registered

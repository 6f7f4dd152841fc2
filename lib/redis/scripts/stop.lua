--[[
  Stop (or expire) a crawl in O(log n), whatever its size (nothing is scanned): its records (drop_crawl)
  and dupefilter are removed and its crawl key is blacklisted for a while so late children are refused.
  Its queued requests are purged lazily: a lease that meets one drops it; the crawl's per-domain counters
  (and the per-domain backlog they account for) are settled by settle_stopped (sweep-finished.lua) in
  bounded chunks, run by sweepFinished and before every backlog read, so backlog() stays exact. Until
  then the ref sits in K.finished at score 0 and is not reused. Leased requests may finish; their acks
  find the crawl gone.

  KEYS[1..19]  partition keys (includes/frontier.lua)
  KEYS[20]     the crawl's dupefilter
  ARGV[1..5]   common frontier arguments
  ARGV[6]      crawl key
  ARGV[7]      how long the crawl key stays stopped (ms)

  Returns {purged, settings JSON or ''}: how many queued requests were purged, and the crawl's settings.
  Cost: O(log n); the dupefilter is freed in the background (UNLINK).
]]
--- @include "frontier"

local ckey = ARGV[6]
-- Stops that have run out go a hundred at a time (they sort first): each stop adds one, so the set drains, and no
-- stop after a quiet spell deletes every stop of the spell in one command. One that stays a while is harmless:
-- enqueue compares its time with now.
local gone = math.min(redis.call('ZCOUNT', K.stopped, '-inf', NOW), 100)
if gone > 0 then redis.call('ZREMRANGEBYRANK', K.stopped, 0, gone - 1) end
redis.call('ZADD', K.stopped, NOW + tonumber(ARGV[7]), ckey)
redis.call('UNLINK', KEYS[20])
local ref = redis.call('HGET', K.refs, ckey)
if not ref then return {0, ''} end

-- Queued (and delayed) requests of the crawl: its K.counts total, kept in step with its K.cidx counters.
local purged = tonumber(redis.call('HGET', K.counts, ref .. '\0q') or 0)
local record = crawl_record(ref)
local settings = ''
if record then
  settings = record_settings(record)
  drop_crawl(ref, record)
else
  redis.call('HDEL', K.refs, ckey)
end
redis.call('ZADD', K.finished, 0, ref)
return {purged, settings}

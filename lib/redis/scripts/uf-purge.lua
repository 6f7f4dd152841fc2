--[[
  URL frontier: delete URLs of one queue created before a cutoff (PurgeURLs), among the members named: the store
  reads the queue a page at a time (HSCAN) and names the old ones of each page; the date is checked again here, so a
  URL stored again in between stays. The queue itself stays.

  KEYS[1..6]   the frontier-wide keys, KEYS[7..8] the crawl's (includes/uf.lua)
  KEYS[9..]    the queue's six keys, KEYS[9..14], read by use_queue(1, ...) (includes/uf.lua)
  ARGV[1]      crawl ID
  ARGV[2]      queue key
  ARGV[3]      cutoff (epoch s): URLs created before it go
  ARGV[4..]    members to consider

  Returns the number deleted. A queue that lost URLs is due again by its earliest scheduled URL (see uf-put.lua);
  the backlog total loses those that were scheduled or held (a counted queue).
  Answers the error `UFMOVE <message>` and writes nothing while the frontier is fenced (includes/uf.lua fence()).
  Cost: O(members named × log n).
]]
--- @include "uf"

local fenced = fence()
if fenced then return redis.error_reply(FENCE_ERROR .. ' ' .. fenced) end

use_crawl(7, ARGV[1])
use_queue(1, ARGV[2])

local cutoff = tonumber(ARGV[3])
local n = 0
local active = 0
for j = 4, #ARGV do
  local url = ARGV[j]
  local value = redis.call('HGET', K.created, url)
  if value and split_created(value) < cutoff then
    redis.call('HDEL', K.created, url)
    active = active + redis.call('ZREM', K.sched, url) + drop_hold(url)
    redis.call('SREM', K.done, url)
    n = n + 1
  end
end
-- fewer completed URLs: a queue at its crawl limit may produce again
if n > 0 then
  wake_queue()
  if counted() then count_backlog(-active) end
end
return n

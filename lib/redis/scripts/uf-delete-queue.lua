--[[
  URL frontier: delete one queue and all its URLs (DeleteQueue, DeleteCrawl); the crawl disappears with its
  last queue.

  KEYS[1..6]   the frontier-wide keys, KEYS[7..8] the crawl's (includes/uf.lua)
  KEYS[9..]    the queue's six keys, KEYS[9..14], read by use_queue(1, ...) (includes/uf.lua)
  ARGV[1]      crawl ID
  ARGV[2]      queue key

  Returns the number of URLs removed (active and completed); 0 for an unknown queue. The queue leaves `due` and `qdue`,
  and the backlog total (a counted queue) follows.
  Answers the error `UFMOVE <message>` and writes nothing while the frontier is fenced (includes/uf.lua fence()).
  Cost: O(1) commands; UNLINK frees the O(n) memory in a background thread.
]]
--- @include "uf"

local fenced = fence()
if fenced then return redis.error_reply(FENCE_ERROR .. ' ' .. fenced) end

use_crawl(7, ARGV[1])
use_queue(1, ARGV[2])

if not redis.call('ZSCORE', K.queues, QKEY) then return 0 end
local n = redis.call('HLEN', K.created)
if counted() then count_backlog(-(redis.call('ZCARD', K.sched) + held_count())) end
-- UNLINK: a queue of millions of URLs is freed in the background, not while every other client waits
redis.call('UNLINK', K.created, K.sched, K.held, K.hdate, K.done, K.info)
redis.call('ZREM', K.queues, QKEY)
place_queue(nil)
if redis.call('ZCARD', K.queues) == 0 then redis.call('SREM', K.crawls, CRAWL) end
return n

--[[
  URL frontier: set a field of one queue's info (SetDelay with a key: `delay`; BlockQueueUntil: `blocked`;
  SetCrawlLimit: `limit`) and make the queue due now: a shorter delay, an ended block or a higher limit may let it
  produce before the time uf-serve gave it (or at all, if it had left `due`). uf-serve places it again on the next
  GetURLs (out of `due` when it has nothing). An unknown queue is left alone.

  KEYS[1..6]   the frontier-wide keys, KEYS[7..8] the crawl's (includes/uf.lua)
  KEYS[9..]    the queue's six keys, KEYS[9..14], read by use_queue(1, ...) (includes/uf.lua)
  ARGV[1]      crawl ID
  ARGV[2]      queue key
  ARGV[3]      the info field
  ARGV[4]      its value
  ARGV[5]      now (epoch ms): the queue's time in `due` and `qdue`

  Returns 1, or 0 for an unknown queue.
  Answers the error `UFMOVE <message>` and writes nothing while the frontier is fenced (includes/uf.lua fence()).
  Cost: O(log q).
]]
--- @include "uf"

local fenced = fence()
if fenced then return redis.error_reply(FENCE_ERROR .. ' ' .. fenced) end

use_crawl(7, ARGV[1])
use_queue(1, ARGV[2])
if not redis.call('ZSCORE', K.queues, QKEY) then return 0 end
redis.call('HSET', K.info, ARGV[3], ARGV[4])
place_queue(tonumber(ARGV[5]))
return 1

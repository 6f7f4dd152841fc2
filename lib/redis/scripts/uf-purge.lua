--[[
  URL frontier: delete the URLs of one queue created before a cutoff (PurgeURLs). The queue itself stays.

  KEYS[1..12]  the crawl's keys and one queue's (includes/uf.lua)
  ARGV[1]      crawl ID
  ARGV[2]      queue key
  ARGV[3]      cutoff (epoch s): URLs created before it go

  Returns the number deleted.
  Cost: O(n) over the queue's URLs.
]]
--- @include "uf"

use_queue(1, ARGV[2])

local cutoff = tonumber(ARGV[3])
local all = redis.call('HGETALL', K.created)
local n = 0
for j = 1, #all, 2 do
  local url = all[j]
  local created = split_created(all[j + 1])
  if created < cutoff then
    redis.call('HDEL', K.created, url)
    redis.call('ZREM', K.sched, url)
    redis.call('ZREM', K.held, url)
    redis.call('HDEL', K.hdate, url)
    redis.call('SREM', K.done, url)
    n = n + 1
  end
end
return n

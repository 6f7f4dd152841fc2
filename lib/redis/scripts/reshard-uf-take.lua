--[[
  Take queues of several crawls out of a partition of the URL frontier's old count during `frontier reshard`
  (lib/redis/url-frontier/reshard-queues.ts), once reshard-uf-put.lua has registered their copies in the new count:
  each queue whose signature (includes/uf-move.lua) is the one of its copy is deleted as DeleteQueue deletes it (its
  keys, its place in `queues`, `due` and `qdue`, its URLs in the backlog total), so the old partition stays
  consistent with what is left in it if the move stops here. A queue that changed since it was copied, or is gone,
  is left as it is and counted: something wrote to it (the move stops, and its next run copies it again). A crawl
  leaves `crawls` with its last queue.

  KEYS[1..6]   the frontier-wide keys of the old partition, then per crawl its group (includes/uf.lua; keys.ts
               urlFrontierGroupsKeys)
  ARGV[1..]    per crawl, in KEYS order: crawl ID, queue count n, then per queue 2 values: queue key, the signature of
               its copy

  Returns {taken, changed, the crawl ID and key of the first queue that changed ('' when none)}.
  Cost: O(1) commands per queue (UNLINK frees the memory in the background).
]]
--- @include "uf"
--- @include "uf-move"

local taken, changed = 0, 0
local first_crawl, first_key = '', ''
local c, k = 1, 7 -- the current crawl's ARGV and KEYS
while c <= #ARGV do
  use_crawl(k, ARGV[c])
  local n = tonumber(ARGV[c + 1])
  for i = 1, n do
    local a = c + 2 * i
    use_queue(i, ARGV[a])
    if not redis.call('ZSCORE', K.queues, QKEY) or queue_signature() ~= ARGV[a + 1] then
      if changed == 0 then first_crawl, first_key = CRAWL, QKEY end
      changed = changed + 1
    else
      if counted() then count_backlog(-(redis.call('ZCARD', K.sched) + held_count())) end
      index_holds('ZREM')
      redis.call('UNLINK', K.created, K.sched, K.held, K.hdate, K.done, K.info)
      redis.call('ZREM', K.queues, QKEY)
      place_queue(nil)
      taken = taken + 1
    end
  end
  if redis.call('EXISTS', K.queues) == 0 then redis.call('SREM', K.crawls, CRAWL) end
  c = c + 2 + 2 * n
  k = k + 2 + 6 * n
end
return { taken, changed, first_crawl, first_key }

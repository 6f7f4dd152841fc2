--[[
  Read queues of several crawls out of a partition of the URL frontier's old count during `frontier reshard`
  (lib/redis/url-frontier/reshard-queues.ts), for reshard-uf-put.lua to restore in the new count: per queue its number
  of URLs, its times in its crawl's `due` and in `qdue`, and, for a queue of at most ARGV[1] URLs, the DUMP payloads
  of its six keys, while the URLs of the queues read so far are at most ARGV[2] (the first such queue is read
  whatever its size). A larger queue's keys are not read here (the caller copies them a page at a time), nor those of
  a queue past the budget (the caller reads them in its next call), so one call holds Redis for a bounded time. Reads
  only.

  KEYS[1..6]   the frontier-wide keys of the old partition, then per crawl its group: its two keys and its queues'
               six keys each, in ARGV order (includes/uf.lua; keys.ts urlFrontierGroupsKeys)
  ARGV[1]      the most URLs of a queue whose keys are read whole
  ARGV[2]      the most URLs of the queues read whole by this call
  ARGV[3..]    per crawl, in KEYS order: crawl ID, queue count n, then its n queue keys

  Returns per queue, in ARGV order, {URLs, due time or '', qdue time or '', then six DUMP payloads ('' for a missing
  key), or none for a queue not read}.
  Cost: O(URLs) per queue read whole, O(log q) per queue.
]]
--- @include "uf"

local max, budget = tonumber(ARGV[1]), tonumber(ARGV[2])
local read = 0
local out = {}
local a, k = 3, 7
while a <= #ARGV do
  use_crawl(k, ARGV[a])
  local n = tonumber(ARGV[a + 1])
  for i = 1, n do
    use_queue(i, ARGV[a + 1 + i])
    local size = redis.call('HLEN', K.created)
    local q = {
      size,
      redis.call('ZSCORE', K.due, QKEY) or '',
      redis.call('ZSCORE', K.qdue, QMEMBER) or '',
    }
    if size <= max and (read == 0 or read + size <= budget) then
      read = read + size
      q[4] = redis.call('DUMP', K.created) or ''
      q[5] = redis.call('DUMP', K.sched) or ''
      q[6] = redis.call('DUMP', K.held) or ''
      q[7] = redis.call('DUMP', K.hdate) or ''
      q[8] = redis.call('DUMP', K.done) or ''
      q[9] = redis.call('DUMP', K.info) or ''
    end
    out[#out + 1] = q
  end
  a = a + 2 + n
  k = k + 2 + 6 * n
end
return out

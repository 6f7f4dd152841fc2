--[[
  Put queues of several crawls into a partition of the URL frontier's new count during `frontier reshard`
  (lib/redis/url-frontier/reshard-queues.ts), before reshard-uf-take.lua takes them from the old one. Per queue, by
  its mode:
  - 'r': its keys restored from the DUMP payloads of the old partition's (REPLACE: a copy made before is replaced),
    then registered;
  - 'c': cleared: its keys deleted and the queue unregistered, before a queue too large to restore whole is copied a
    page at a time;
  - 'g': registered once that paged copy is done.
  Registering puts the queue in its crawl's `queues` (and the crawl in `crawls`), at the given times in its crawl's
  `due` and in `qdue` (or in neither), marks it counted and adds its URLs scheduled or held to the backlog total. A
  queue registered already (by a run that died before taking it from the old partition) is uncounted first, so a
  queue put twice is counted once. The fence of the new partition (includes/uf.lua fence()) is not read: the move is
  what it keeps the servers out for.

  KEYS[1..6]   the frontier-wide keys of the new partition, then per crawl its group: its two keys and its queues'
               six keys each, in ARGV order (includes/uf.lua; keys.ts urlFrontierGroupsKeys)
  ARGV[1..]    per crawl, in KEYS order: crawl ID, queue count n, then per queue 10 values: queue key, mode ('r', 'c'
               or 'g'), its time in the crawl's `due` ('' for none), its time in `qdue` ('' for none), then for 'r' the
               DUMP payloads of its created, sched, held, hdate, done and info keys ('' for a key the old partition
               does not have; all '' for 'c' and 'g')

  Returns per queue, in ARGV order, {signature, present}: its signature (includes/uf-move.lua; '' for 'c') and 1 when
  it was registered here already, else 0.
  Cost: O(n) per queue restored (n: its URLs), O(log q) per queue registered.
]]
--- @include "uf"
--- @include "uf-move"

-- Puts the queue K points at, whose 10 values start at ARGV[a]: {signature, present}.
local function put_queue(a)
  local mode, due, qdue = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  local present = redis.call('ZSCORE', K.queues, QKEY) ~= false
  if present then
    if mode == 'g' then return nil end
    count_backlog(-(redis.call('ZCARD', K.sched) + held_count()))
  end
  if mode == 'c' then
    index_holds('ZREM')
    redis.call('UNLINK', K.created, K.sched, K.held, K.hdate, K.done, K.info)
    redis.call('ZREM', K.queues, QKEY)
    place_queue(nil)
    if redis.call('EXISTS', K.queues) == 0 then redis.call('SREM', K.crawls, CRAWL) end
    return { '', present and 1 or 0 }
  end
  if mode == 'r' then
    -- Each key from its payload, or deleted when the old partition has none.
    local p = a + 4
    if ARGV[p] == '' then redis.call('DEL', K.created) else redis.call('RESTORE', K.created, 0, ARGV[p], 'REPLACE') end
    if ARGV[p + 1] == '' then redis.call('DEL', K.sched) else redis.call('RESTORE', K.sched, 0, ARGV[p + 1], 'REPLACE') end
    if ARGV[p + 2] == '' then redis.call('DEL', K.held) else redis.call('RESTORE', K.held, 0, ARGV[p + 2], 'REPLACE') end
    if ARGV[p + 3] == '' then redis.call('DEL', K.hdate) else redis.call('RESTORE', K.hdate, 0, ARGV[p + 3], 'REPLACE') end
    if ARGV[p + 4] == '' then redis.call('DEL', K.done) else redis.call('RESTORE', K.done, 0, ARGV[p + 4], 'REPLACE') end
    if ARGV[p + 5] == '' then redis.call('DEL', K.info) else redis.call('RESTORE', K.info, 0, ARGV[p + 5], 'REPLACE') end
  end
  redis.call('ZADD', K.queues, 0, QKEY)
  redis.call('SADD', K.crawls, CRAWL)
  redis.call('HSET', K.info, 'counted', 1)
  count_backlog(redis.call('ZCARD', K.sched) + held_count())
  index_holds('ZADD')
  if due ~= '' then redis.call('ZADD', K.due, due, QKEY) else redis.call('ZREM', K.due, QKEY) end
  if qdue ~= '' then redis.call('ZADD', K.qdue, qdue, QMEMBER) else redis.call('ZREM', K.qdue, QMEMBER) end
  return { queue_signature(), present and 1 or 0 }
end

local out = {}
local c, k = 1, 7 -- the current crawl's ARGV and KEYS
while c <= #ARGV do
  use_crawl(k, ARGV[c])
  local n = tonumber(ARGV[c + 1])
  for i = 1, n do
    local a = c + 2 + 10 * (i - 1)
    use_queue(i, ARGV[a])
    local put = put_queue(a)
    if not put then return redis.error_reply('ERR reshard-uf-put: queue ' .. QKEY .. ' is registered already') end
    out[#out + 1] = put
  end
  c = c + 2 + 10 * n
  k = k + 2 + 6 * n
end
return out

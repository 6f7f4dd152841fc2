--[[
  URL frontier: indexes part of a crawl of a frontier stored before the due index over every crawl (`qdue`) or the
  backlog total existed (the store walks every crawl once, in pages; lib/redis/url-frontier/index-walk.ts). Puts
  each named queue that is in the crawl's `due` into `qdue` at the same time (migrating the older `rot` first, as
  uf-claim.lua does), and adds each named queue that is not counted yet to the backlog total, marking it counted.
  Idempotent, so two servers walking at once, or a walk over crawls that newer code created (already indexed), count
  nothing twice.

  KEYS[1]       state    HASH backlog (the frontier's URLs scheduled or held, in counted queues)
  KEYS[2]       qdue     ZSET queue member ('<byte length of crawl ID>:<crawl ID><queue key>') -> its time in `due`
  KEYS[3]       queues   ZSET the crawl's queue keys
  KEYS[4]       due      ZSET queue key -> epoch ms from which the queue may produce
  KEYS[5]       rot      ZSET the pre-`due` rotation (legacy; absent once migrated)
  KEYS[3i+3..3i+5]       per queue i, in ARGV order: sched, held, info
  ARGV[1]       crawl ID
  ARGV[2..]     the queue keys (a queue deleted since it was listed is skipped)

  Returns the number of queues counted by this call.
  Cost: O(queues named × log q).
]]
local state = KEYS[1]
local qdue = KEYS[2]
local queues = KEYS[3]
local due = KEYS[4]
local rot = KEYS[5]
local crawl = ARGV[1]

if redis.call('EXISTS', rot) == 1 then
  if redis.call('EXISTS', due) == 0 then redis.call('ZUNIONSTORE', due, 1, rot, 'WEIGHTS', 0) end
  redis.call('DEL', rot)
end
local prefix = #crawl .. ':' .. crawl

local n = 0
local backlog = 0
for i = 1, #ARGV - 1 do
  local b = 3 * i
  local key = ARGV[i + 1]
  local at = redis.call('ZSCORE', due, key)
  -- NX: a queue already there was placed by newer code since (its time there is the one to keep)
  if at then redis.call('ZADD', qdue, 'NX', at, prefix .. key) end
  if redis.call('ZSCORE', queues, key) and redis.call('HSETNX', KEYS[b + 5], 'counted', 1) == 1 then
    backlog = backlog + redis.call('ZCARD', KEYS[b + 3]) + redis.call('ZCARD', KEYS[b + 4])
    n = n + 1
  end
end
if backlog > 0 then redis.call('HINCRBY', state, 'backlog', backlog) end
return n

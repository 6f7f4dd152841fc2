--[[
  URL frontier: the queues that GetURLs (without a key) should look at now, among those of the crawls named: the
  queues whose time in their crawl's `due` has come, the longest-due first across the crawls. Each is pushed `claim` ms
  into the future at once, so concurrent GetURLs calls (from any server) take different queues; uf-serve.lua then
  gives each its real next time (or takes it out of `due`). Queues with nothing to serve are not in `due`, and crawls
  with nothing in `due` not in `cdue`, so an empty GetURLs costs O(log c), whatever the frontier holds. Each crawl's
  place in `cdue` follows its `due` (also when nothing was claimed: a stale place is mended here).

  A GetURLs over every crawl names the crawls `cdue` gives as due, longest-due first; crawl i of them can hold at
  most count - i + 1 of the `count` longest-due queues (the i - 1 before it each hold one due no later), so no more
  are read from it.

  A crawl stored before `due` existed has a `rot` (the old round-robin rotation) and no `due`: its queues are made due
  now, once (O(q), on the first GetURLs after the upgrade), and `rot` goes. Crawls that `cdue` gives have none (the
  walk of uf-index.lua migrated them, or they are newer), so a GetURLs over every crawl does not look (ARGV[4]).

  KEYS[1]     cdue     ZSET crawl ID -> the earliest time in its `due`
  KEYS[2i..2i+1]       per crawl i, in ARGV order: due (ZSET queue key -> epoch ms from which the queue may produce)
                       and rot (ZSET, the pre-`due` rotation; legacy, absent once migrated)
  ARGV[1]     now (epoch ms)
  ARGV[2]     count: the most queues to return
  ARGV[3]     claim (ms): how far the returned queues are pushed until uf-serve places them (so a server that dies
              between the two calls delays them by this much, no more)
  ARGV[4]     1: migrate a crawl's `rot` if it has one, else 0
  ARGV[5..]   the crawl IDs, in KEYS order

  Returns, per queue claimed, longest-due first: the crawl's index among ARGV[5..] (1-based) and the queue key.
  Cost: O(crawls × log q + count² + count × log q + crawls × log c).
]]
local cdue = KEYS[1]
local now = tonumber(ARGV[1])
local count = tonumber(ARGV[2])
local until_ms = now + tonumber(ARGV[3])
local legacy = ARGV[4] == '1'
local crawls = #ARGV - 4

local found = {}
-- per crawl: the due queues read (up to `limit`), and whether that was all of them
local read, all = {}, {}
for i = 1, crawls do
  local due = KEYS[2 * i]
  local rot = KEYS[2 * i + 1]
  if legacy and redis.call('EXISTS', rot) == 1 then
    if redis.call('EXISTS', due) == 0 then redis.call('ZUNIONSTORE', due, 1, rot, 'WEIGHTS', 0) end
    redis.call('DEL', rot)
  end
  local limit = math.max(1, count - i + 1)
  local keys = redis.call('ZRANGE', due, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit, 'WITHSCORES')
  read[i] = #keys / 2
  all[i] = read[i] < limit
  for j = 1, #keys, 2 do
    found[#found + 1] = { tonumber(keys[j + 1]), i, keys[j] }
  end
end
table.sort(found, function(x, y)
  if x[1] ~= y[1] then return x[1] < y[1] end
  if x[2] ~= y[2] then return x[2] < y[2] end
  return x[3] < y[3]
end)

local out = {}
for j = 1, math.min(count, #found) do
  local f = found[j]
  local at = 2 * f[2]
  local claimed_due = KEYS[at]
  redis.call('ZADD', claimed_due, until_ms, f[3])
  out[#out + 1] = f[2]
  out[#out + 1] = f[3]
end
-- Each crawl's new place in `cdue`: the earliest due queue left unclaimed; when every due queue read was claimed, the
-- claim's end if those were all it had due (uf-serve places the crawl exactly within milliseconds, or, if the
-- server dies first, the crawl waits no longer than its claimed queues), or still due now if there may be more; when
-- none was due (a stale place), the earliest time in its `due`.
local next_at = {}
for j = count + 1, #found do
  local f = found[j]
  if not next_at[f[2]] then next_at[f[2]] = f[1] end
end
for i = 1, crawls do
  local crawl = ARGV[4 + i]
  if read[i] == 0 then
    local first = redis.call('ZRANGE', KEYS[2 * i], 0, 0, 'WITHSCORES')
    if first[2] then
      redis.call('ZADD', cdue, first[2], crawl)
    else
      redis.call('ZREM', cdue, crawl)
    end
  elseif next_at[i] then
    redis.call('ZADD', cdue, next_at[i], crawl)
  elseif all[i] then
    redis.call('ZADD', cdue, until_ms, crawl)
  else
    redis.call('ZADD', cdue, 'LT', now, crawl)
  end
end
return out

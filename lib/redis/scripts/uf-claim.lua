--[[
  URL frontier: the queues that GetURLs (without a key) should look at now: those whose time in an index of due
  queues has come, the longest-due first, from `qdue` (every crawl) or from one crawl's `due`. Each is pushed
  `claim` ms into the future there at once, so concurrent GetURLs calls (from any server) take different queues;
  uf-serve.lua then gives each its real next time in both indexes (or takes it out of both). Queues with nothing to
  serve are in neither, so an empty GetURLs costs O(log q), whatever the frontier holds. (A queue claimed in one index
  is still due in the other: a GetURLs of the other kind may serve it too, which uf-serve's checks make safe.)

  A crawl stored before `due` existed has a `rot` (the old round-robin rotation) and no `due`: its queues are made due
  now, once (O(q), on the first GetURLs naming the crawl after the upgrade), and `rot` goes. Over every crawl nothing
  is migrated: the walk of uf-index.lua put the due queues of every such crawl into `qdue` first.

  KEYS[1]     qdue (ZSET '<byte length of crawl ID>:<crawl ID><queue key>' -> epoch ms from which the queue may
              produce) or, over one crawl, its due (ZSET queue key -> the same)
  KEYS[2]     over one crawl only: its rot (ZSET, the pre-`due` rotation; legacy, absent once migrated)
  ARGV[1]     now (epoch ms)
  ARGV[2]     count: the most queues to return
  ARGV[3]     claim (ms): how far the returned queues are pushed until uf-serve places them (so a server that dies
              between the two calls delays them by this much, no more)

  Returns, per queue claimed, longest-due first: over every crawl its crawl ID and queue key; over one crawl its key.
  Cost: O(log q + count).
]]
local index = KEYS[1]
local now = tonumber(ARGV[1])
local count = tonumber(ARGV[2])
local until_ms = now + tonumber(ARGV[3])

local one_crawl = KEYS[2] ~= nil
if one_crawl and redis.call('EXISTS', KEYS[2]) == 1 then
  if redis.call('EXISTS', index) == 0 then redis.call('ZUNIONSTORE', index, 1, KEYS[2], 'WEIGHTS', 0) end
  redis.call('DEL', KEYS[2])
end
local due = redis.call('ZRANGE', index, '-inf', now, 'BYSCORE', 'LIMIT', 0, count)
if #due == 0 then return {} end
local claims = {}
for j = 1, #due do
  claims[2 * j - 1] = until_ms
  claims[2 * j] = due[j]
end
redis.call('ZADD', index, 'XX', unpack(claims))
if one_crawl then return due end
local out = {}
for j = 1, #due do
  local member = due[j]
  local colon = string.find(member, ':', 1, true)
  local stop = colon + tonumber(string.sub(member, 1, colon - 1))
  out[2 * j - 1] = string.sub(member, colon + 1, stop)
  out[2 * j] = string.sub(member, stop + 1)
end
return out

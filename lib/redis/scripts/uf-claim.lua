--[[
  URL frontier: the queues of a crawl that GetURLs (without a key) should look at now: those whose time in `due` has
  come, the longest-due first. Each is pushed `claim` ms into the future at once, so concurrent GetURLs calls (from
  any server) take different queues; uf-serve.lua then gives each its real next time (or takes it out of `due`).
  Queues with nothing to serve are not in `due`, so an empty GetURLs costs O(log q), whatever the crawl holds.

  A crawl stored before `due` existed has a `rot` (the old round-robin rotation) and no `due`: its queues are made due
  now, once (O(q), on the first GetURLs after the upgrade), and `rot` goes.

  KEYS[1]  due      ZSET queue key -> epoch ms from which the queue may produce
  KEYS[2]  rot      ZSET the pre-`due` rotation (legacy; absent once migrated)
  ARGV[1]  now (epoch ms)
  ARGV[2]  count: the most queues to return
  ARGV[3]  claim (ms): how far the returned queues are pushed until uf-serve places them (so a server that dies
           between the two calls delays them by this much, no more)

  Returns the queue keys, longest-due first.
  Cost: O(log q + count × log q).
]]
local due = KEYS[1]
local rot = KEYS[2]
local now = tonumber(ARGV[1])

if redis.call('EXISTS', rot) == 1 then
  if redis.call('EXISTS', due) == 0 then redis.call('ZUNIONSTORE', due, 1, rot, 'WEIGHTS', 0) end
  redis.call('DEL', rot)
end
local keys = redis.call('ZRANGE', due, '-inf', now, 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[2]))
if #keys > 0 then
  local claimed = {}
  local until_ms = now + tonumber(ARGV[3])
  for _, key in ipairs(keys) do
    claimed[#claimed + 1] = until_ms
    claimed[#claimed + 1] = key
  end
  redis.call('ZADD', due, unpack(claimed))
end
return keys

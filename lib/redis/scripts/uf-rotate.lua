--[[
  URL frontier: the next queues of a crawl for GetURLs without a key. Takes the `count` queues at the front of
  the rotation and moves each to the back, so consecutive calls (from any server) start at different queues.

  KEYS[1]  state    HASH (field seq: the rotation counter)
  KEYS[2]  rot      ZSET queue key -> rotation sequence
  ARGV[1]  count

  Returns the queue keys, front first.
  Cost: O(count × log q).
]]
local state = KEYS[1]
local rot = KEYS[2]
local keys = redis.call('ZRANGE', rot, 0, tonumber(ARGV[1]) - 1)
for _, key in ipairs(keys) do
  redis.call('ZADD', rot, redis.call('HINCRBY', state, 'seq', 1), key)
end
return keys

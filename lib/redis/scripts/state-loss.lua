--[[
  Notes that the crawl state of one hash tag was lost (lib/redis/state-marker.ts), once per lost epoch: every process
  that had seen the marker detects the same loss, and only the first note counts, so a late detector never reopens a
  loss an operator acknowledged.

  KEYS[1]  the loss record (keys.ts stateLossKey): field `lost:<tag>` → loss JSON, `acked` → epoch ms
  ARGV[1]  the field, `lost:<tag>`
  ARGV[2]  the epoch that was lost
  ARGV[3]  the loss, JSON (its `epoch` is ARGV[2])

  Returns 1 when noted, 0 when this loss (same tag, same lost epoch) was noted already.
  Cost: O(1).
]]
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old then
  local ok, prev = pcall(cjson.decode, old)
  if ok and type(prev) == 'table' and prev.epoch == ARGV[2] then return 0 end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
-- An open loss is kept until acknowledged, whatever TTL an earlier acknowledgement set.
redis.call('PERSIST', KEYS[1])
return 1

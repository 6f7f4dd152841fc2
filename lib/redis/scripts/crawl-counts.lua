--[[
  The counters of crawls in one partition, for the caller that sums a crawl over partitions
  (lib/redis/partition-sums.ts): whether a crawl complete here is complete everywhere, and its totals.

  KEYS[1]      the partition's crawl refs (HASH crawl key -> ref)
  KEYS[2]      the partition's per-crawl counters (HASH)
  ARGV[1..n]   crawl keys

  Returns 4 numbers per crawl key: queued, leased, done, failed; all -1 when the crawl has no record here.
  Cost: O(1) per crawl key.
]]
local out = {}
for i = 1, #ARGV do
  local ref = redis.call('HGET', KEYS[1], ARGV[i])
  if ref then
    local c = redis.call('HMGET', KEYS[2], ref .. '\0q', ref .. '\0l', ref .. '\0done', ref .. '\0fail')
    for k = 1, 4 do out[#out + 1] = tonumber(c[k] or 0) end
  else
    for _ = 1, 4 do out[#out + 1] = -1 end
  end
end
return out

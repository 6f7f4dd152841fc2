--[[
  Adds to time-bucketed stats counters and registers their names, atomically, in one call.

  Each counter is one HASH. For every window W (seconds) it keeps buckets of width W / B seconds,
  fields `<W>:<bucket index>` where index = floor(nowMs / (W * 1000 / B)), plus `<W>:last`, the newest
  index written; and `lifetime`, the running total. A window's buckets are always within
  [last - B + 1, last]: when `last` advances, the buckets that fell out of that range are deleted
  (at most B per window), so a counter holds at most windows * (B + 1) + 1 fields whatever its age.
  An increment whose bucket is already out of a window's range (a caller with a clock far behind)
  counts only in `lifetime` and in the windows it still falls in.

  Input:
    KEYS[1]           the names registry (SET)
    KEYS[2..n+1]      the counters (HASH), one per name, in the order of the names in ARGV

    ARGV[1]           now, epoch ms
    ARGV[2]           B, buckets per window
    ARGV[3]           window lengths in seconds, comma-separated ("900,3600,...")
    ARGV[4..]         n pairs: counter name, increment (integer >= 0)

  Output:
    the number of names that were not in the registry before
]]
local now = tonumber(ARGV[1])
local B = tonumber(ARGV[2])

local windows = {}
for w in string.gmatch(ARGV[3], '[^,]+') do
  windows[#windows + 1] = w
end

local lastFields = {}
for i = 1, #windows do
  lastFields[i] = windows[i] .. ':last'
end

local added = 0
for k = 2, #KEYS do
  local key = KEYS[k]
  local name = ARGV[2 + 2 * (k - 1)]
  local by = tonumber(ARGV[3 + 2 * (k - 1)])
  added = added + redis.call('SADD', KEYS[1], name)

  if by > 0 then
    redis.call('HINCRBY', key, 'lifetime', by)
    local lasts = redis.call('HMGET', key, unpack(lastFields))
    for i = 1, #windows do
      local w = windows[i]
      local idx = math.floor(now / (tonumber(w) * 1000 / B))
      local last = tonumber(lasts[i])
      if last == nil or idx > last then
        if last ~= nil then
          -- Buckets that exist are in [last - B + 1, last]; those below idx - B + 1 just left the window.
          local from = last - B + 1
          local to = math.min(last, idx - B)
          if to >= from then
            local stale = {}
            for j = from, to do
              stale[#stale + 1] = w .. ':' .. j
            end
            redis.call('HDEL', key, unpack(stale))
          end
        end
        redis.call('HSET', key, lastFields[i], idx)
        redis.call('HINCRBY', key, w .. ':' .. idx, by)
      elseif idx > last - B then
        redis.call('HINCRBY', key, w .. ':' .. idx, by)
      end
    end
  end
end

return added

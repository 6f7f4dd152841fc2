--[[
  A crawl's dupefilter: the exact set of its request fingerprints (8 bytes each) in one HASH, a linear hash table
  whose format enqueue.lua's header describes, as the enqueue step (includes/enqueue.lua) and dupefilter-add.lua
  read and add to it. `c` is the caller's record of one crawl: c.dupe its dupefilter key; c.df is filled in here on
  first use (the set's size and bucket count), and the caller writes it back to field '' when c.df.dirty:

    redis.call('HSET', c.dupe, '', c.df.n .. ':' .. c.df.buckets)

  dupe_find(c, fp) says whether fp is in the set, and if not gives what dupe_add(c, field, rest, v) needs to add it.
  Adding many at once (dupefilter-add.lua): dupe_reserve(c, k) makes the splits k adds would make, after which they
  can go in a bucket at a time (dupe_bucket, bucket_has).
]]

-- h = byte 1 + 256 * byte 2 of the fingerprint; with N buckets, L = floor(log2 N) and s = N - 2^L buckets already
-- split at this level, its bucket is h mod 2^L, or h mod 2^(L+1) when that is below s. N >= 256, so a bucket's
-- number fixes byte 1, and an entry holds bytes 2..8 (7 bytes).
local DUPE_LOAD, DUPE_MIN, DUPE_MAX = 32, 256, 65536

local function dupe_state(c)
  if not c.df then
    local meta = redis.call('HGET', c.dupe, '')
    local n, b = 0, DUPE_MIN
    if meta then
      local i = string.find(meta, ':', 1, true)
      n, b = tonumber(string.sub(meta, 1, i - 1)), tonumber(string.sub(meta, i + 1))
    end
    local level = DUPE_MIN
    while level * 2 <= b do level = level * 2 end
    c.df = { n = n, buckets = b, level = level }
  end
  return c.df
end

local function bucket_field(b)
  return string.char(b % 256, math.floor(b / 256))
end

local function dupe_bucket(df, fp)
  local h = string.byte(fp, 1) + 256 * string.byte(fp, 2)
  local b = h % df.level
  if b < df.buckets - df.level then b = h % (df.level * 2) end
  return bucket_field(b)
end

-- Whether a bucket's value (nil: an empty bucket) holds the 7-byte rest of a fingerprint.
local function bucket_has(v, rest)
  if not v then return false end
  local from = 1
  while true do
    local j = string.find(v, rest, from, true)
    if not j then return false end
    if (j - 1) % 7 == 0 then return true end
    from = j + 1
  end
end

-- Whether fp is in the crawl's set; if not, also its bucket field and that bucket's value.
local function dupe_find(c, fp)
  local df = dupe_state(c)
  local field, rest = dupe_bucket(df, fp), string.sub(fp, 2, 8)
  local v = redis.call('HGET', c.dupe, field)
  if bucket_has(v, rest) then return true end
  return false, field, rest, v
end

-- Splits the next bucket: its entries go to the same number or that number + 2^L.
local function dupe_split(c, df)
  local s = df.buckets - df.level
  local from = bucket_field(s)
  local v = redis.call('HGET', c.dupe, from)
  if v then
    local keep, move = {}, {}
    local byte1 = s % 256
    for j = 1, #v, 7 do
      local h = byte1 + 256 * string.byte(v, j)
      if h % (df.level * 2) == s then keep[#keep + 1] = string.sub(v, j, j + 6)
      else move[#move + 1] = string.sub(v, j, j + 6) end
    end
    if #keep > 0 then redis.call('HSET', c.dupe, from, table.concat(keep)) else redis.call('HDEL', c.dupe, from) end
    if #move > 0 then redis.call('HSET', c.dupe, bucket_field(s + df.level), table.concat(move)) end
  end
  df.buckets = df.buckets + 1
  if df.buckets == df.level * 2 then df.level = df.level * 2 end
end

-- Adds fp (known to be absent) to the crawl's set.
local function dupe_add(c, field, rest, v)
  local df = c.df
  redis.call('HSET', c.dupe, field, (v or '') .. rest)
  df.n = df.n + 1
  df.dirty = true
  if df.n > DUPE_LOAD * df.buckets and df.buckets < DUPE_MAX then dupe_split(c, df) end
end

-- Splits buckets ahead of `extra` fingerprints about to be added together (the splits their adds one at a time would
-- make), so that they can be added a bucket at a time.
local function dupe_reserve(c, extra)
  local df = dupe_state(c)
  while df.n + extra > DUPE_LOAD * df.buckets and df.buckets < DUPE_MAX do dupe_split(c, df) end
end

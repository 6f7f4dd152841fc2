--[[
  Add fingerprints to a crawl's dupefilter (the HASH enqueue.lua's header describes), bucketed as enqueue adds them
  (includes/dupefilter.lua): `frontier reshard` copies a crawl's dupefilter into each partition of the new layout.
  A fingerprint already in the set is left alone, so adding the same fingerprints again changes nothing.

  KEYS[1]   the dupefilter HASH
  ARGV[1]   time to live (ms): the HASH expires no sooner than this from now (a longer one it has is kept)
  ARGV[2]   the fingerprints, 8 bytes each, concatenated

  Returns how many fingerprints were added.
  Cost: one read and one write per bucket the fingerprints fall in (a few hundred bytes each), plus the bucket splits
  they cause, made first; then the buckets are read again.
]]
--- @include "dupefilter"

local c = { dupe = KEYS[1] }
local fps = ARGV[2]
if #fps % 8 ~= 0 then return error('ERR fingerprints are 8 bytes') end
local df = dupe_state(c)

-- The fingerprints by bucket (as the set's buckets are now): field -> their 7-byte rests, each once.
local function by_bucket()
  local out, order = {}, {}
  for i = 1, #fps, 8 do
    local fp = string.sub(fps, i, i + 7)
    local field = dupe_bucket(df, fp)
    local g = out[field]
    if not g then
      g = { rests = {}, seen = {} }
      out[field] = g
      order[#order + 1] = field
    end
    local rest = string.sub(fp, 2, 8)
    if not g.seen[rest] then
      g.seen[rest] = true
      g.rests[#g.rests + 1] = rest
    end
  end
  return out, order
end

-- Those not in the set yet, by bucket, and how many.
local function missing(groups, order)
  local out, n = {}, 0
  for _, field in ipairs(order) do
    local v = redis.call('HGET', c.dupe, field)
    local add = {}
    for _, rest in ipairs(groups[field].rests) do
      if not bucket_has(v, rest) then add[#add + 1] = rest end
    end
    out[field] = { v = v, add = add }
    n = n + #add
  end
  return out, n
end

local groups, order = by_bucket()
local todo, added = missing(groups, order)
if added > 0 and df.n + added > DUPE_LOAD * df.buckets and df.buckets < DUPE_MAX then
  -- The splits first; the buckets they changed are read again.
  dupe_reserve(c, added)
  groups, order = by_bucket()
  todo, added = missing(groups, order)
end
for _, field in ipairs(order) do
  local t = todo[field]
  if #t.add > 0 then redis.call('HSET', c.dupe, field, (t.v or '') .. table.concat(t.add)) end
end
if added > 0 then
  df.n = df.n + added
  redis.call('HSET', c.dupe, '', df.n .. ':' .. df.buckets)
end
local ttl = tonumber(ARGV[1])
if ttl > 0 and redis.call('PTTL', c.dupe) < ttl then redis.call('PEXPIRE', c.dupe, ttl) end
return added

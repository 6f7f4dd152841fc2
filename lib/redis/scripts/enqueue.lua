--[[
  Enqueue a batch of requests into one frontier partition, in one round trip. Per request, in order:
  stopped crawl → refused; crawl unknown (a child whose crawl ended) → refused; crawl expired → refused;
  already seen in this crawl (dupefilter) → duplicate; domain page cap reached → refused; else queued.
  (Duplicate before cap, so a redelivered batch answers duplicate for what it queued the first time.)
  Seeds register their crawl on first sight (settings stored once per crawl). Enqueueing the same batch
  twice changes nothing the second time. A blacklisted domain's requests are queued but not scheduled.

  KEYS[1..17]       partition keys (includes/frontier.lua)
  KEYS[17+i]        dupefilter SET of the i-th crawl of ARGV
  ARGV[1..5]        common frontier arguments
  ARGV[6]           dupefilter TTL (s), refreshed on every enqueue
  ARGV[7]           number of crawls C; then C groups of 5:
                      crawl key, appid, settings JSON ('' = must already exist), expires (epoch s, 0 = never),
                      domain_max_pages (0 = no cap)
  then              number of requests R; then R groups of 7:
                      crawl index (1..C), fingerprint (8 bytes), domain, priority, depth, retries, url

  Returns a list of R codes: 1 queued, 0 duplicate, -1 crawl stopped, -2 crawl expired,
  -3 domain page cap reached, -4 unknown crawl.
  Cost: O(log n) per request plus O(log n) per distinct domain.
]]
--- @include "frontier"

local ttl = tonumber(ARGV[6])
local ncrawls = tonumber(ARGV[7])
local crawls = {}
local a = 8
for i = 1, ncrawls do
  local c = {
    key = ARGV[a], appid = ARGV[a + 1], settings = ARGV[a + 2], expires = tonumber(ARGV[a + 3]),
    cap = tonumber(ARGV[a + 4]), dupe = KEYS[17 + i],
  }
  a = a + 5
  local stop_until = redis.call('ZSCORE', K.stopped, c.key)
  if stop_until and tonumber(stop_until) > NOW then
    c.status = -1
  else
    c.ref = redis.call('HGET', K.refs, c.key)
    if c.ref then
      local exp = redis.call('ZSCORE', K.expiry, c.ref)
      if exp and tonumber(exp) * 1000 <= NOW then c.status = -2 end
      c.cap = tonumber(redis.call('HGET', K.counts, c.ref .. '\0maxp') or 0)
    elseif c.settings == '' then
      c.status = -4
    elseif c.expires > 0 and c.expires * 1000 <= NOW then
      c.status = -2
    end
  end
  crawls[i] = c
end

local function register(c)
  c.ref = tostring(redis.call('INCR', K.seq))
  redis.call('HSET', K.refs, c.key, c.ref)
  redis.call('HSET', K.settings, c.ref, c.settings)
  if c.expires > 0 then redis.call('ZADD', K.expiry, c.expires, c.ref) end
  redis.call('ZADD', K.apps, 0, c.appid .. '\0' .. c.ref)
  if c.cap > 0 then redis.call('HSET', K.counts, c.ref .. '\0maxp', c.cap) end
end

local nreq = tonumber(ARGV[a])
a = a + 1
local codes = {}
local touched = {}
for i = 1, nreq do
  local c = crawls[tonumber(ARGV[a])]
  local fp, domain, prio = ARGV[a + 1], ARGV[a + 2], clamp_prio(tonumber(ARGV[a + 3]))
  local depth, retries, url = ARGV[a + 4], ARGV[a + 5], ARGV[a + 6]
  a = a + 7
  if c.status then
    codes[i] = c.status
  else
    local capf = nil
    local over = false
    if c.cap and c.cap > 0 and c.ref then
      capf = c.ref .. '\0' .. domain .. '\0cap'
      over = tonumber(redis.call('HGET', K.counts, capf) or 0) >= c.cap
        and redis.call('SISMEMBER', c.dupe, fp) == 0
    end
    if over then
      codes[i] = -3
    elseif redis.call('SADD', c.dupe, fp) == 0 then
      codes[i] = 0
    else
      if not c.ref then
        register(c)
        if c.cap and c.cap > 0 then capf = c.ref .. '\0' .. domain .. '\0cap' end
      end
      if capf then
        if redis.call('HINCRBY', K.counts, capf, 1) == 1 then redis.call('ZADD', K.cidx, 0, capf) end
      end
      local m = build_member(domain, prio, redis.call('INCR', K.seq), c.ref, depth, retries, url)
      redis.call('ZADD', K.queue, 0, m)
      count_queued(parse_member(m), 1)
      touched[domain] = true
      codes[i] = 1
    end
    c.used = true
  end
end
for d in pairs(touched) do schedule(d) end
for _, c in ipairs(crawls) do
  if c.used then redis.call('EXPIRE', c.dupe, ttl) end
end
return codes

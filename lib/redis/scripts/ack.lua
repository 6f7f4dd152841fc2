--[[
  Ack a leased request: its page was published (outcome 'done') or it failed for good ('fail').
  A late ack (the lease had expired and the request was reclaimed but not yet leased again) removes the
  queued copy, so a slow crawler does not cause a second fetch. Reclaim counts a retry, which changes the
  member, so the late ack looks for it with up to RECLAIM_LOOKAHEAD more retries (includes/frontier.lua).

  KEYS[1..18]  partition keys (includes/frontier.lua)
  ARGV[1..5]   common frontier arguments
  ARGV[6]      member (the lease handle)
  ARGV[7]      outcome: 'done' | 'fail'
  ARGV[8]      dupefilter TTL (s): a crawl this ack completes is swept that long after (K.finished)

  Returns {code, queued, leased, done, failed}
    code 1 acked, 2 acked and the crawl is now complete (nothing queued, nothing leased), 0 the crawl was
    stopped or expired meanwhile, -1 unknown lease (already acked). Of the two holders of a request reclaimed
    and leased again, the first to ack counts and the other gets -1.
  Cost: O(log n).
]]
--- @include "frontier"

-- Removes a member from wherever it is: 'leased', 'queued' (queue or delayed), or nil when nowhere.
local function take(mm)
  if redis.call('ZREM', K.leases, mm) == 1 then return 'leased' end
  if redis.call('ZREM', K.queue, mm) == 1 or redis.call('ZREM', K.delayed, mm) == 1 then return 'queued' end
  return nil
end

local m = ARGV[6]
local where = take(m)
if not where then
  -- A late ack: the request may have been reclaimed since (each reclaim counts a retry, so its member changed).
  local old = parse_member(m)
  for k = 1, RECLAIM_LOOKAHEAD do
    m = reclaimed_member(old, k)
    where = take(m)
    if where then break end
  end
end
if not where then return {-1, 0, 0, 0, 0} end
local r = parse_member(m)
if not crawl_alive(r) then return {0, 0, 0, 0, 0} end
if where == 'leased' then
  redis.call('HINCRBY', K.counts, r.ref .. '\0l', -1)
else
  count_queued(r, -1)
  schedule(r.domain)
end
local outcome = ARGV[7] == 'fail' and 'fail' or 'done'
redis.call('HINCRBY', K.counts, r.ref .. '\0' .. outcome, 1)
local c = redis.call('HMGET', K.counts, r.ref .. '\0q', r.ref .. '\0l', r.ref .. '\0done', r.ref .. '\0fail')
local q, l = tonumber(c[1] or 0), tonumber(c[2] or 0)
local code = 1
if q <= 0 and l <= 0 then
  code = 2
  redis.call('ZADD', K.finished, NOW + tonumber(ARGV[8]) * 1000, r.ref)
end
return {code, q, l, tonumber(c[3] or 0), tonumber(c[4] or 0)}

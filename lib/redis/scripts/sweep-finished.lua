--[[
  Background cleanup of crawls that ended, in bounded steps:
  - stopped crawls (stop.lua leaves their ref in K.finished at score 0): their per-domain counters are
    settled, a chunk at a time: each domain's backlog (K.dcount, and the total K.qtotal) loses what the crawl
    had queued there, then the counters are deleted; when none is left the ref is free;
  - completed crawls (an ack left nothing queued or leased; ack.lua put them in K.finished at completion +
    the dupefilter TTL), once due and still idle: all their records are dropped (drop_crawl), and their
    per-domain counters (page caps) as a stopped crawl's are, within the same budget. Their dupefilters have
    expired on their own by then. A crawl swept here is unknown afterwards: late children are refused
    (unknown_crawl), a new seed starts it afresh. One that got work meanwhile left K.finished when it did; one
    found with work anyway is only taken out of K.finished.

  KEYS[1..19]  partition keys (includes/frontier.lua)
  ARGV[1..5]   common frontier arguments
  ARGV[6]      at most this many crawls per call
  ARGV[7]      'all', or 'stopped': only settle stopped crawls (what backlog reads depend on)
  ARGV[8]      at most this many counters settled per call

  Returns {swept, more}: how many completed crawls were dropped, and whether work is left (1|0).
  Cost: O(log n) per crawl plus O(log n) per counter, bounded by ARGV[6] and ARGV[8].
]]
--- @include "frontier"

local limit, budget = tonumber(ARGV[6]), tonumber(ARGV[8])
local upto = NOW
if ARGV[7] == 'stopped' then upto = 0 end

-- Settles up to `budget` counters of a stopped crawl's ref; returns how many, and whether none is left.
local function settle_stopped(ref, budget)
  if budget <= 0 then return 0, false end
  local base = vnum(ref) * CB
  local entries = redis.call('ZRANGEBYSCORE', K.cidx, base, base + CB - 1, 'WITHSCORES', 'LIMIT', 0, budget)
  local n = #entries / 2
  local by_domain = {}
  local skip = #ref + 2
  for i = 1, #entries, 2 do
    local f = entries[i]
    local k = string.find(f, '\0', skip, true)
    -- Members without a priority part are page-cap counters, not queued requests.
    if k then
      local domain = string.sub(f, skip, k - 1)
      by_domain[domain] = (by_domain[domain] or 0) + tonumber(entries[i + 1]) - base
    end
  end
  local domains, counts = {}, {}
  for domain, c in pairs(by_domain) do
    domains[#domains + 1] = domain
    counts[#counts + 1] = c
  end
  total_kept()
  for i = 1, #domains, 1000 do
    local j = math.min(i + 999, #domains)
    local now_counts = redis.call('HMGET', K.dcount, unpack(domains, i, j))
    local set, del, gone = {}, {}, 0
    for k = i, j do
      local had = tonumber(now_counts[k - i + 1] or 0)
      local left = had - counts[k]
      if left > 0 then
        set[#set + 1] = domains[k]
        set[#set + 1] = left
        gone = gone + counts[k]
      else
        del[#del + 1] = domains[k]
        gone = gone + had
      end
    end
    if #set > 0 then redis.call('HSET', K.dcount, unpack(set)) end
    if #del > 0 then redis.call('HDEL', K.dcount, unpack(del)) end
    add_total(-gone)
  end
  -- The entries read are the first n of the range: delete them by rank, in one command.
  if n > 0 then
    local first = redis.call('ZCOUNT', K.cidx, '-inf', '(' .. string.format('%.0f', base))
    redis.call('ZREMRANGEBYRANK', K.cidx, first, first + n - 1)
  end
  return n, n < budget
end

local due = redis.call('ZRANGEBYSCORE', K.finished, '-inf', upto, 'LIMIT', 0, limit)
local swept, more = 0, 0
for _, ref in ipairs(due) do
  local record = crawl_record(ref)
  if not record then
    local n, done = settle_stopped(ref, budget)
    budget = budget - n
    if not done then
      more = 1
      break
    end
    redis.call('ZREM', K.finished, ref)
  else
    local c = redis.call('HMGET', K.counts, ref .. '\0q', ref .. '\0l')
    if tonumber(c[1] or 0) <= 0 and tonumber(c[2] or 0) <= 0 then
      drop_crawl(ref, record)
      swept = swept + 1
      -- Its per-domain counters (page caps: one per domain) go within the budget, as a stopped crawl's do; the
      -- rest wait in K.finished at score 0, which keeps the ref taken until they are gone.
      local n, done = settle_stopped(ref, budget)
      budget = budget - n
      if not done then
        redis.call('ZADD', K.finished, 0, ref)
        more = 1
        break
      end
      redis.call('ZREM', K.finished, ref)
    else
      redis.call('ZREM', K.finished, ref)
    end
  end
end
if more == 0 and #due == limit and #redis.call('ZRANGEBYSCORE', K.finished, '-inf', upto, 'LIMIT', 0, 1) > 0 then
  more = 1
end
return {swept, more}

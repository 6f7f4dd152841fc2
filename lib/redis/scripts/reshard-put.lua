--[[
  Move requests into a partition of the new layout during `frontier reshard` (lib/redis/reshard.ts): each keeps its
  domain, priority, sequence number (so its FIFO place), depth, retries and URL, and takes its crawl's ref here
  (reshard-register.lua registered the crawl first). The new member is a function of the old one, so a request
  moved twice (a move run again after dying between this call and reshard-take.lua's) is added once: counters
  count only what is added. Queued requests are scheduled as enqueue schedules them; delayed retries keep their
  time. Also sets the page-cap counters (pages ever queued per crawl and domain) of the domains here, to the old
  layout's count where that is more.

  KEYS[1..19]  partition keys (includes/frontier.lua)
  ARGV[1..5]   common frontier arguments
  ARGV[6]      C, the number of crawls, then their crawl keys (ARGV[7..6+C])
  then         R, the number of requests, then R groups of 3: crawl index (1..C), the request's member in the old
               layout (includes/frontier.lua), delayed until (epoch ms; '' for a queued request)
  then         P, the number of page-cap counters, then P groups of 3: crawl index, domain, pages ever queued
  ARGV[7..]    (the groups above, read at computed offsets)

  Returns {added, present}: requests added, and requests that were here already.
  Cost: O(log n) per request and per page-cap counter; counters are summed over the call and written once each,
  and each domain given a queued request is scheduled once.
]]
--- @include "frontier"

local nc = tonumber(ARGV[6])
local refs = {}
for i = 1, nc do
  local ref = redis.call('HGET', K.refs, ARGV[6 + i])
  if not ref then return error('ERR reshard: crawl ' .. ARGV[6 + i] .. ' is not registered in this partition') end
  refs[i] = ref
end

local a = 7 + nc
local nreq = tonumber(ARGV[a])
a = a + 1
local added, present = 0, 0
-- Added requests per crawl, domain and priority (one count_queued each), and the domains to schedule.
local groups, touched, active = {}, {}, {}
for _ = 1, nreq do
  local ref = refs[tonumber(ARGV[a])]
  local r = parse_member(ARGV[a + 1])
  local until_ms = ARGV[a + 2]
  a = a + 3
  local m = build_member(r.domain, r.prio, b62_num(r.seq), ref, r.depth, r.retries, r.tail)
  local n
  if until_ms == '' then
    n = redis.call('ZADD', K.queue, 0, m)
    touched[r.domain] = true
  else
    n = redis.call('ZADD', K.delayed, until_ms, m)
  end
  if n == 1 then
    added = added + 1
    local f = queued_field(ref, r.domain, r.pe)
    local g = groups[f]
    if g then g.n = g.n + 1 else groups[f] = { ref = ref, domain = r.domain, pe = r.pe, n = 1 } end
    if not active[ref] then
      redis.call('ZREM', K.finished, ref)
      active[ref] = true
    end
  else
    present = present + 1
  end
end
for _, g in pairs(groups) do count_queued(g, g.n) end
for domain in pairs(touched) do schedule(domain) end

local ncap = tonumber(ARGV[a])
a = a + 1
for _ = 1, ncap do
  local ref = refs[tonumber(ARGV[a])]
  local f, pages = ref .. '\0' .. ARGV[a + 1], tonumber(ARGV[a + 2])
  a = a + 3
  local refnum = vnum(ref)
  if pages > cidx_get(refnum, f) then redis.call('ZADD', K.cidx, refnum * CB + pages, f) end
end
return {added, present}

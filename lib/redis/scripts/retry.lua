--[[
  Retry a leased request later: back in the queue at priority - 10 with retries + 1, not leasable before
  the backoff delay passes (held in the delayed set; lease moves it back when due). Possibly fetched by
  another crawler.

  KEYS[1..19]  partition keys (includes/frontier.lua)
  ARGV[1..5]   common frontier arguments
  ARGV[6]      member (the lease handle)
  ARGV[7]      delay (ms)
  ARGV[8]      hold the request's domain for this long (ms; 0: no hold): a Retry-After that applies to the whole
               site, so no crawler fetches from it before then (the longer of this and an existing hold wins)

  Returns {1, new member} retried, {0} the crawl was stopped or expired meanwhile, {-1} unknown lease.
  Cost: O(log n).
]]
--- @include "frontier"

local m = ARGV[6]
if redis.call('ZREM', K.leases, m) == 0 then return {-1} end
local r = parse_member(m)
local hold_ms = tonumber(ARGV[8]) or 0
if hold_ms > 0 then
  local until_ms = NOW + hold_ms
  local old = tonumber(redis.call('HGET', K.throttle, hold_field(r.domain)))
  if not old or old < until_ms then redis.call('HSET', K.throttle, hold_field(r.domain), until_ms) end
  schedule(r.domain)
end
if not crawl_alive(r) then return {0} end
redis.call('HINCRBY', K.counts, r.ref .. '\0l', -1)
local nm = build_member(r.domain, clamp_prio(r.prio - 10), redis.call('INCR', K.seq), r.ref, r.depth, r.retries + 1, r.tail)
redis.call('ZADD', K.delayed, NOW + tonumber(ARGV[7]), nm)
count_queued(parse_member(nm), 1)
return {1, nm}

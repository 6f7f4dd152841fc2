--[[
  Moves a lease's throttle hit to when its fetch really starts. lease.lua charges the domain's throttle at lease
  time; a crawler that cannot fetch at once (robots.txt to read first, a busy event loop) calls this before it
  fetches, so the spacing the site sees is the throttle's and the Crawl-delay's, not that minus the delay. When a
  later lease took the turn meanwhile, the fetch waits for the next turn instead; when that is too far off, or
  the domain is held or throttled to 0 hits by now, the lease goes back to its queue unfetched (hit taken back).

  KEYS[1..19]  partition keys (includes/frontier.lua)
  ARGV[1..5]   common frontier arguments (includes/frontier.lua)
  ARGV[6]      the lease's member (lease handle)
  ARGV[7]      egress IP of the caller ('' when throttles are not IP-scoped)
  ARGV[8]      the lease's throttle hit (epoch ms, as lease.lua returned it)
  ARGV[9]      longest wait (ms)

  Returns
    {1, wait}  fetch `wait` ms from now (0: now); the hit is recorded at that time
    {0}        do not fetch: the request went back to its queue (or was not leased any more: reclaimed)
  Cost: O(log hits) to find the hit in the throttle's log and one copy of it, O(log n) to requeue.
]]
--- @include "frontier"

local m = ARGV[6]
local ip = ARGV[7]
local stamp = tonumber(ARGV[8])
local max_wait = tonumber(ARGV[9])
local r = parse_member(m)
local domain = r.domain
local tkey = domain
if IP_MODE and ip ~= '' then tkey = domain .. '\0' .. ip end

-- Take the lease's own hit out of the throttle's state (it may be gone already: a later lease's replaced it in a
-- moderated throttle, or it left a full log).
local state = redis.call('HGET', K.throttle, tkey)
if state then
  local log = log_norm(state)
  local n = log_len(log)
  if MODERATED then
    if n > 0 and log_at(log, n) == stamp then
      if n == 1 then
        redis.call('HDEL', K.throttle, tkey)
      else
        redis.call('HSET', K.throttle, tkey, log_sub(log, 1, n - 1))
      end
    end
  else
    local i = log_after(log, stamp - 1, 1, n) -- the first at or after the stamp (times are whole ms)
    if i <= n and log_at(log, i) == stamp then
      if n == 1 then
        redis.call('HDEL', K.throttle, tkey)
      else
        redis.call('HSET', K.throttle, tkey, log_sub(log, 1, i - 1) .. log_sub(log, i + 1, n))
      end
    end
  end
end

if redis.call('ZSCORE', K.leases, m) == false then return {0} end
local due = throttle_due(tkey, domain)
if due - NOW > max_wait then
  redis.call('ZREM', K.leases, m)
  requeue(m, r)
  return {0}
end
local at = math.max(NOW, due)
throttle_hit(tkey, domain, at)
return {1, at - NOW}

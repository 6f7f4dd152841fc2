--[[
  Lease the next requests of a frontier partition, up to ARGV[9] of them, each as a single lease would take it: the
  highest-priority request among domains whose throttle allows a fetch now, FIFO among equal priority. The throttle
  hit is recorded only when a request is leased. A leased request stays invisible to others until it is acked,
  released or reclaimed.

  KEYS[1..19]  partition keys (includes/frontier.lua)
  ARGV[1..5]   common frontier arguments (includes/frontier.lua)
  ARGV[6]      lease duration (ms)
  ARGV[7]      egress IP of the caller ('' when throttles are not IP-scoped)
  ARGV[8]      bound on work per call: promotions of due domains/retries, stale requests skipped, ready domains
               checked against the caller's IP
  ARGV[9]      the most requests to lease (>= 1; 1 when absent)
  ARGV[10]     the most requests of one domain this call leases (0 or absent: no limit)
  ARGV[11..]   domains the caller leases nothing of in this call (its per-domain in-flight cap is reached); they,
               and those that reach ARGV[10] in this call, keep their place and stay ready for every other caller

  Returns, when n requests were leased (1 <= n <= ARGV[9]):
    {1, skipped, hit, next_due, left, member_1, settings_1, ..., member_n, settings_n}
      member_i    the i-th lease's member (the lease handle; binary), in the order the leases were taken
      settings_i  its crawl's settings (JSON)
      hit         when the throttle hits of all n were recorded (epoch ms: the call's NOW; restamp.lua's ARGV[8])
  and when none was:
    {0, next_due, skipped, left}
  left = what is left for the caller:
    1  more is due now: a domain is ready that the caller does not exclude and this call leased nothing of
       (next_due = NOW).
    3  more is due now (next_due = NOW), but only in domains this call leased from: those that reached ARGV[10] (they
       were excluded only for the rest of this call, and are ready for the next) or whose requests filled ARGV[9].
       A caller with its own per-domain cap (the crawler's in-flight cap) judges whether those are still leasable
       to it once it counts this call's leases.
    2  ready work is left only in domains the caller excluded (ARGV[11..]): nothing the caller may lease now; it
       becomes leasable to it when it drops one of them. next_due = when other work may be due (a throttle, a retry's
       backoff; -1: none), never NOW for the excluded domains.
    0  no domain is ready (or, with IP scoping, none the caller's IP may fetch now); next_due as below.
  next_due = epoch ms when something may be due (-1: no work; NOW when ready domains are left that the bound did
  not reach, or with left = 1).
  skipped = requests of stopped crawls, or of crawls whose `expires` has passed, dropped on the way (lazy purge).
  Cost: O(log n) per promotion, per skipped request and per lease: at most ARGV[8] promotions of each kind and
  ARGV[8] + ARGV[9] - 1 domains taken (with IP scoping, each look checks up to ARGV[8] ready domains; with k
  domains excluded, each look reads up to k + 1), then one read of up to k + t + 1 ready domains for `left` (t: the
  domains this call leased from, at most ARGV[9]).
]]
--- @include "frontier"

local lease_ms = tonumber(ARGV[6])
local ip = ARGV[7]
local bound = tonumber(ARGV[8])
local want = tonumber(ARGV[9]) or 1
local per_domain = tonumber(ARGV[10]) or 0
local taken = {}
-- excluded: the caller's domains (true) and those that reach ARGV[10] in this call ('call').
local excluded, n_excluded = {}, 0
for i = 11, #ARGV do
  excluded[ARGV[i]] = true
  n_excluded = n_excluded + 1
end
local n_caller_excluded = n_excluded
local n_taken = 0

-- Retries whose backoff passed go back to their queues.
local touched = {}
for _, m in ipairs(redis.call('ZRANGEBYSCORE', K.delayed, '-inf', NOW, 'LIMIT', 0, bound)) do
  redis.call('ZREM', K.delayed, m)
  redis.call('ZADD', K.queue, 0, m)
  touched[parse_member(m).domain] = true
end
for d in pairs(touched) do schedule(d) end
-- Domains whose throttle now allows a fetch become ready (the loop below checks the throttle of the one it takes).
for _, d in ipairs(redis.call('ZRANGEBYSCORE', K.waiting, '-inf', NOW, 'LIMIT', 0, bound)) do promote(d) end

-- Expiry is checked here, lazily, when a request would be leased (docs/contract.md: a request of an expired crawl
-- is never fetched); the expiry function's timer only announces the crawl and stops it. One ZSCORE per crawl per
-- call, remembered: K.expiry holds the crawls that have an `expires` (epoch seconds), due as expiry-due.lua sees it.
local now_s = math.floor(NOW / 1000)
local expired_refs = {}
local function expired(ref)
  local e = expired_refs[ref]
  if e == nil then
    local at = redis.call('ZSCORE', K.expiry, ref)
    e = at ~= false and tonumber(at) <= now_s
    expired_refs[ref] = e
  end
  return e
end

local skipped = 0
local HEAD = 5
local out = {1, 0, NOW, NOW, 0}
local ip_next_due = nil
-- True until the loop stops on its own (nothing ready or nothing due for this IP): a loop that ran out of
-- its bound (skipping purged requests, re-parking domains) leaves work it has not looked at.
local exhausted = true
for _ = 1, bound + want - 1 do
  local domain, tkey = nil, nil
  if not IP_MODE or ip == '' then
    -- The best ready domain the caller does not exclude: among the first k + 1, at most k are excluded.
    for _, d in ipairs(redis.call('ZRANGE', K.ready, 0, n_excluded)) do
      if not excluded[d] then
        domain = d
        break
      end
    end
    if not domain then
      exhausted = false
      break
    end
    tkey = domain
    -- The domain's config may have tightened since it became ready.
    local due = throttle_due(domain, domain)
    if due > NOW then
      redis.call('ZREM', K.ready, domain)
      redis.call('ZADD', K.waiting, due, domain)
      domain = nil
    end
  else
    -- IP scoping: each egress IP has its own throttle per domain, so the best few ready domains are
    -- checked against this caller's IP (bounded by ARGV[8]).
    for _, d in ipairs(redis.call('ZRANGE', K.ready, 0, bound - 1 + n_excluded)) do
      if not excluded[d] then
        local key = d .. '\0' .. ip
        local due = throttle_due(key, d)
        if due <= NOW then
          domain, tkey = d, key
          break
        end
        if not ip_next_due or due < ip_next_due then ip_next_due = due end
      end
    end
    if not domain then
      exhausted = false
      break
    end
  end
  if domain then
    local m = domain_head(domain)
    if not m then
      redis.call('ZREM', K.ready, domain)
    else
      redis.call('ZREM', K.queue, m)
      local r = parse_member(m)
      local record = crawl_record(r.ref)
      if not alive_in(record, r) or expired(r.ref) then
        -- Its crawl was stopped, or its `expires` has passed: drop it, no throttle hit. The counters are settled
        -- by stop (which the expiry function runs for an expired crawl: its purged count, total_expired, includes
        -- the requests dropped here, and the crawl cannot look complete before) and the sweep.
        skipped = skipped + 1
        schedule(domain)
      else
        throttle_hit(tkey, domain)
        count_queued(r, -1)
        redis.call('HINCRBY', K.counts, r.ref .. '\0l', 1)
        redis.call('ZADD', K.leases, NOW + lease_ms, m)
        schedule(domain)
        out[#out + 1] = m
        out[#out + 1] = record_settings(record)
        if not taken[domain] then n_taken = n_taken + 1 end
        taken[domain] = (taken[domain] or 0) + 1
        if per_domain > 0 and taken[domain] >= per_domain and not excluded[domain] then
          excluded[domain] = 'call'
          n_excluded = n_excluded + 1
        end
        if #out >= HEAD + 2 * want then break end
      end
    end
  end
end

-- What is ready for the caller (see `left` in the header): 0 nothing, 1 a domain it did not exclude and this call
-- leased nothing of, 3 only domains this call leased from (and excluded ones), 2 only excluded ones. Among the first
-- k + t + 1 ready domains, at most k are the caller's and t this call's.
local function ready_left()
  local left = 0
  for _, d in ipairs(redis.call('ZRANGE', K.ready, 0, n_caller_excluded + n_taken)) do
    if excluded[d] == true then
      if left == 0 then left = 2 end
    elseif taken[d] then
      left = 3
    else
      return 1
    end
  end
  return left
end

-- When the next request may be due (-1: no work) and `left` (see the header). All wanted leased, or out of bound,
-- with a domain the caller may lease still ready: more may be leasable right now, so say so rather than sending the
-- caller to sleep until the next throttle or retry. With IP scoping, a loop that stopped on its own found none of
-- the ready domains due for this IP: their throttles are in ip_next_due.
local function answer(all_leased)
  local left = ready_left()
  local more = left == 1 or left == 3
  if more and (all_leased or exhausted or not IP_MODE or ip == '') then return NOW, left end
  local due = -1
  local w = redis.call('ZRANGE', K.waiting, 0, 0, 'WITHSCORES')
  -- A domain whose effective hits are 0 waits at NEVER: it is not work that will become due.
  if w[2] and tonumber(w[2]) < NEVER then due = tonumber(w[2]) end
  local dl = redis.call('ZRANGE', K.delayed, 0, 0, 'WITHSCORES')
  if dl[2] and (due < 0 or tonumber(dl[2]) < due) then due = tonumber(dl[2]) end
  if ip_next_due and ip_next_due < NEVER and (due < 0 or ip_next_due < due) then due = ip_next_due end
  if more then
    if due < 0 then return NOW, left end
    return due, 0
  end
  -- Ready, but only in the caller's excluded domains (left 2): they become leasable to it when it drops one of them.
  return due, left
end

if #out > HEAD then
  out[2] = skipped
  out[4], out[5] = answer(#out >= HEAD + 2 * want)
  return out
end
local due, left = answer(false)
return {0, due, skipped, left}

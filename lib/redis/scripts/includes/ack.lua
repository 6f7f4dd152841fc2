--[[
  The ack step, shared by ack.lua and ack-enqueue.lua (included after "frontier"; ack.lua's header says what an
  ack means and what it returns).

  ack_lease(m, outcome, ttl): m the member (the lease handle), outcome 'done' | 'fail', ttl the dupefilter TTL (s).
  Returns {code, queued, leased, done, failed}.
]]

-- Removes a member from wherever it is: 'leased', 'queued' (queue or delayed), or nil when nowhere.
local function take(mm)
  if redis.call('ZREM', K.leases, mm) == 1 then return 'leased' end
  if redis.call('ZREM', K.queue, mm) == 1 or redis.call('ZREM', K.delayed, mm) == 1 then return 'queued' end
  return nil
end

local function ack_lease(m, outcome, ttl)
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
  if outcome ~= 'fail' then outcome = 'done' end
  redis.call('HINCRBY', K.counts, r.ref .. '\0' .. outcome, 1)
  local c = redis.call('HMGET', K.counts, r.ref .. '\0q', r.ref .. '\0l', r.ref .. '\0done', r.ref .. '\0fail')
  local q, l = tonumber(c[1] or 0), tonumber(c[2] or 0)
  local code = 1
  if q <= 0 and l <= 0 then
    code = 2
    redis.call('ZADD', K.finished, NOW + ttl * 1000, r.ref)
  end
  return {code, q, l, tonumber(c[3] or 0), tonumber(c[4] or 0)}
end

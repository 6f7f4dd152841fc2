--[[
  URL frontier: serve queues for GetURLs, several per call, of one crawl or several. For each queue: releases expired holds (at
  most 2 × cap per call, the earliest first), then checks that the queue is not blocked, its domain not blacklisted
  (the Kafka API's blacklist), under its crawl limit, past its politeness delay since it last produced, and below
  max URLs in flight; takes the due URLs
  (date <= now, not held; by date then URL), holds them until `held until`, and stamps lastProduced if any was
  taken. Atomic, so two servers never hand out the same held URL. The metadata is read only from queues whose
  info has `meta` (uf-put.lua).
  A domain throttle override (`hits` per `window` s, times `scale`) caps the queue at floor(hits * scale) URLs
  (at least 1) per serve and at least `window` s between serves, so no window holds more than that many URLs
  handed out. (Max URLs in flight stays the client's `max`.)
  Every queue served or looked at gets its place in `due` (includes/uf.lua): the earliest time it may produce again
  (its next scheduled URL, its politeness delay, its block, its first hold to end when it is at `max` in flight or
  has nothing scheduled, a recheck in ARGV[6] ms when its domain is blacklisted), always later than now, or none
  when it has nothing scheduled or held or is at its crawl limit: GetURLs (uf-claim.lua) never looks at it again
  until a put, a hold, SetDelay, BlockQueueUntil, SetCrawlLimit or PurgeURLs brings it back. A queue's due time
  is not brought forward when the default delay or a domain override is lowered: it comes at the latest when the
  old one would have ended. Its place in `qdue` (over every crawl) is the same.

  KEYS[1..5]   the frontier-wide keys (includes/uf.lua), then per crawl, in ARGV order, its due and per queue its
               sched, held, hdate, info and, when ARGV[7] is 1, its created and done (keys.ts urlFrontierServeKeys)
  ARGV[1]      now (epoch ms)
  ARGV[2]      max URLs per queue (0: no limit), the client's
  ARGV[3]      held until (epoch ms)
  ARGV[4]      cap: the most URLs this call takes from one queue (> 0), so that no call runs long whatever the
               client asks; a queue that gave `cap` URLs is served again with ARGV[5] = 1
  ARGV[5]      1: a continuation of the same GetURLs for queues that gave `cap` URLs (no politeness delay check,
               at most max minus in flight; a queue with a domain override gives nothing more), else 0
  ARGV[6]      ms before a queue of a blacklisted domain is looked at again (the blacklist has no index by queue)
  ARGV[7]      1: each queue's six keys are named, else its first four (most queues need no more: a queue whose
               info says it has metadata or a crawl limit is then left as it is, claimed, and counted -1, for the
               caller to serve again with six)
  ARGV[8..]    per crawl, in KEYS order: crawl ID, queue count n, then its n queue keys

  Returns two arrays, over the queues of every crawl in ARGV order: one string per queue (per URL served,
  `<byte length>:<member><byte length>:<metadata JSON, '' for none>`: one bulk reply per queue instead of two per
  URL; empty when the queue is not eligible), and the number of URLs per queue (-1: needs its six keys).
  Answers the error `UFMOVE <message>` and writes nothing while the frontier is fenced (includes/uf.lua fence()).
  Cost: O(expired holds × log n + served × log n) per queue, served ≤ cap, in a few variadic calls per 500 URLs,
  and O(log q) for its place in `due` and `qdue`: about ten commands for a queue that gives one URL.
]]
--- @include "uf"

local now = tonumber(ARGV[1])
local max = tonumber(ARGV[2])
local until_ms = tonumber(ARGV[3])
local cap = tonumber(ARGV[4])
local continuing = ARGV[5] == '1'
local recheck = tonumber(ARGV[6])
local per_queue = ARGV[7] == '1' and 6 or 4
-- Times as Redis takes them (strings, see int()): now, the held-until stamp, and `(now` for ZCOUNT.
local now_s = math.floor(now / 1000)
-- Scheduled URLs a serve reads first (see serve()).
local PROBE = 8
local NOW, UNTIL, AFTER_NOW = ARGV[1], ARGV[3], '(' .. ARGV[1]
-- Frontier-wide, read once per call: the default delay, and whether any domain is blacklisted or overridden (most
-- frontiers have neither, and each queue then skips the lookups).
-- The fence (includes/uf.lua fence()) is read with it: a fenced frontier serves nothing and holds nothing.
local state = redis.call('HMGET', K.state, 'delay', 'fence')
if state[2] then return redis.error_reply(FENCE_ERROR .. ' ' .. state[2]) end
local default_delay = tonumber(state[1] or '1')
local any_black = redis.call('EXISTS', K.black) == 1
local any_cfg = redis.call('EXISTS', K.dcfg) == 1

-- The earliest time (ms) the queue K points at may produce again, later than now; nil when it never will by itself
-- (nothing scheduled or held). `wait`: a time it must wait for anyway (politeness, block), or nil. `hold`: its
-- earliest hold's end when known, false when it holds none, nil when unknown (then read); `inflight`: its URLs held
-- past now when known, else nil (then counted if needed); `sched`: its earliest scheduled URL's date (s) when known,
-- false when it has none, nil when unknown (then read). serve() passes what it knows, sparing the reads.
local function next_due(wait, hold, inflight, sched)
  if sched == nil then
    local first = redis.call('ZRANGE', K.sched, 0, 0, 'WITHSCORES')
    sched = first[2] or false
  end
  if hold == nil then
    local h = redis.call('ZRANGE', K.held, 0, 0, 'WITHSCORES')
    hold = h[2] and tonumber(h[2]) or false
  end
  local t
  if sched then t = tonumber(sched) * 1000 end
  if hold then
    if not t then
      t = hold -- its URL goes back to the schedule then
    elseif max > 0 then
      inflight = inflight or redis.call('ZCOUNT', K.held, AFTER_NOW, '+inf')
      -- at max in flight (for this client's max) until a hold ends or a put releases one
      if inflight >= max then t = math.max(t, hold) end
    end
  end
  if not t then return nil end
  if wait and wait > t then t = wait end
  -- later than now, so a GetURLs that claims due queues visits each at most once
  return math.max(t, now + 1)
end

-- The packed URLs of the queue K points at ('' when it may not produce now), their number and the queue's next due
-- time (nil: none).
local function serve()
  local info = redis.call('HMGET', K.info, 'blocked', 'limit', 'last', 'delay', 'dom', 'meta')
  local blocked, limit, last, delay = tonumber(info[1]), tonumber(info[2]), tonumber(info[3]), tonumber(info[4])
  -- Its earliest hold says whether any ended (then released: at most 2 × cap, the earliest) and, when none did,
  -- where its holds stand without reading them again. A queue that never produced (no `last`) holds none. A queue
  -- deleted since it was claimed has no keys left: it serves nothing and leaves `due` (no check needed).
  local hold, inflight = false, 0
  if last then
    local first_hold = redis.call('ZRANGE', K.held, 0, 0, 'WITHSCORES')
    if first_hold[2] then
      hold, inflight = tonumber(first_hold[2]), nil
      if hold <= now then
        hold = nil
        local lost = release_expired(NOW, 2 * cap)
        if lost > 0 and counted() then count_backlog(-lost) end
      end
    end
  end
  if blocked and blocked >= now then return '', 0, next_due(blocked + 1, hold, inflight) end
  local domain = info[5] or QKEY
  local has_meta = info[6] ~= false
  if any_black and redis.call('SISMEMBER', K.black, domain) == 1 then
    return '', 0, next_due(now + recheck, hold, inflight)
  end
  if not K.done and ((limit and limit > 0) or has_meta) then return '', -1 end
  if limit and limit > 0 and redis.call('SCARD', K.done) >= limit then return '', 0, nil end
  if not delay then delay = default_delay end
  -- take: how many URLs this serve may hand out (max, or the domain override's cap when smaller)
  local take = max
  local cfg = any_cfg and redis.call('HGET', K.dcfg, domain)
  if cfg then
    local hits, window, scale = string.match(cfg, '^([^,]*),([^,]*),([^,]*)$')
    hits, window, scale = tonumber(hits), tonumber(window), tonumber(scale)
    if hits and window and scale then
      local cap = math.max(1, math.floor(hits * scale))
      if take == 0 or take > cap then take = cap end
      if window > delay then delay = window end
    end
  end
  -- the politeness delay ends after this (for the next serve: `last` is now if this one produces)
  local polite = last and last + delay * 1000 + 1
  if cfg and continuing then return '', 0, next_due(polite, hold, inflight) end
  if not continuing and polite and now < polite then return '', 0, next_due(polite, hold, inflight) end
  if max > 0 then
    inflight = inflight or redis.call('ZCOUNT', K.held, AFTER_NOW, '+inf')
    if inflight >= max then return '', 0, next_due(polite, hold, inflight) end
    if continuing and take > max - inflight then take = max - inflight end
  end
  if take == 0 or take > cap then take = cap end
  -- The first few scheduled URLs (up to `probe` + 1): the due ones among them are taken, and the first one left
  -- says when the queue is due next, one read for both (a queue of a few URLs, the common case). When all of them
  -- are due and more may be taken, the rest of the due ones are read, and the next time after they are taken.
  local probe = math.min(take, PROBE)
  local head = redis.call('ZRANGE', K.sched, 0, int(probe), 'WITHSCORES')
  local due, next_sched = {}, false
  local seen_all = #head < 2 * (probe + 1)
  for j = 1, #head, 2 do
    if j > 2 * take or tonumber(head[j + 1]) > now_s then
      next_sched, seen_all = head[j + 1], true
      break
    end
    due[j], due[j + 1] = head[j], head[j + 1]
  end
  if not seen_all then
    local more = redis.call('ZRANGEBYSCORE', K.sched, '-inf', int(now_s), 'WITHSCORES', 'LIMIT', int(probe + 1),
      int(take - probe - 1))
    for j = 1, #more do due[#due + 1] = more[j] end
    next_sched = nil
  end
  local out = {}
  -- In chunks of at most 500 URLs, one variadic call per structure (unpack's stack is bounded).
  for from = 1, #due, 1000 do
    local to = math.min(#due, from + 999)
    local urls, held, hdate = {}, {}, {}
    for j = from, to, 2 do
      local url, date = due[j], due[j + 1]
      urls[#urls + 1] = url
      held[#held + 1] = UNTIL
      held[#held + 1] = url
      hdate[#hdate + 1] = url
      hdate[#hdate + 1] = date
    end
    redis.call('ZREM', K.sched, unpack(urls))
    redis.call('ZADD', K.held, unpack(held))
    redis.call('HSET', K.hdate, unpack(hdate))
    if has_meta then
      local created = redis.call('HMGET', K.created, unpack(urls))
      for j = 1, #urls do
        local meta = ''
        if created[j] then
          local _, m = split_created(created[j])
          if m ~= '{}' then meta = m end
        end
        out[#out + 1] = #urls[j] .. ':' .. urls[j] .. #meta .. ':' .. meta
      end
    else
      for j = 1, #urls do
        out[#out + 1] = #urls[j] .. ':' .. urls[j] .. '0:'
      end
    end
  end
  if #out > 0 then
    redis.call('HSET', K.info, 'last', NOW)
    polite = now + delay * 1000 + 1
    -- the holds just made end at until_ms
    if hold ~= nil then hold = hold and math.min(hold, until_ms) or until_ms end
    if inflight then inflight = inflight + #out end
  end
  return table.concat(out), #out, next_due(polite, hold, inflight, next_sched)
end

local replies, counts = {}, {}
local a = 8 -- the current crawl's ARGV
local k = 6 -- the current crawl's keys
while a <= #ARGV do
  CRAWL = ARGV[a]
  K.due = KEYS[k]
  local n = tonumber(ARGV[a + 1])
  for q = 1, n do
    local at = k + 1 + per_queue * (q - 1)
    K.sched, K.held, K.hdate, K.info = KEYS[at], KEYS[at + 1], KEYS[at + 2], KEYS[at + 3]
    if per_queue == 6 then
      K.created, K.done = KEYS[at + 4], KEYS[at + 5]
    else
      K.created, K.done = nil, nil
    end
    QKEY = ARGV[a + 1 + q]
    QMEMBER = #CRAWL .. ':' .. CRAWL .. QKEY
    local due, r
    r = #replies + 1
    replies[r], counts[r], due = serve()
    if counts[r] >= 0 then place_queue(due) end
  end
  a = a + 2 + n
  k = k + 1 + per_queue * n
end
return { replies, counts }

--[[
  URL frontier: serve queues for GetURLs, several per call, of one crawl or several. For each queue: checks that it
  is not blocked, its domain not blacklisted (the Kafka API's blacklist), under its crawl limit, past its politeness
  delay since it last produced, and below max URLs in flight; takes the due URLs (date <= now, not held; by date then
  URL), holds them until `held until`, and stamps lastProduced if any was taken. Atomic, so two servers never hand
  out the same held URL. The metadata is read only from queues whose info has `meta` (uf-put.lua).
  A hold is a field of the queue's info (the URL's date and the hold's end, includes/uf.lua HOLD_FIELD) and a member
  of the bucket of the holds that end when this call's do (KEYS[7], a LIST listed in `holds`),
  pushed for every queue of the call at once: no key per queue is created for it, no sorted insert per URL. Holds
  that ended are released by uf-release.lua, which GetURLs runs first, not here. A queue whose holds may still be in
  its legacy `held`/`hdate` keys (info `v` not HOLDS_V, and it produced before) moves them first, ended ones back into
  its schedule, at most 2 × cap per call (a queue with more is looked at again at once).
  A domain throttle override (`hits` per `window` s, times `scale`) caps the queue at floor(hits * scale) URLs
  (at least 1) per serve and at least `window` s between serves, so no window holds more than that many URLs
  handed out. (Max URLs in flight stays the client's `max`.)
  Every queue served or looked at gets its place in `due` (includes/uf.lua): the earliest time it may produce again
  (its next scheduled URL, its politeness delay, its block, a recheck in ARGV[6] ms when its domain is blacklisted),
  always later than now, or none when it has nothing scheduled, is at the client's max in flight, or at its crawl
  limit: GetURLs (uf-claim.lua) never looks at it again until a put, a release of its holds, SetDelay,
  BlockQueueUntil, SetCrawlLimit or PurgeURLs brings it back. A queue's due time is not brought forward when the
  default delay or a domain override is lowered: it comes at the latest when the old one would have ended. Its place
  in `qdue` (over every crawl) is the same. A call that serves queues claimed from `qdue` (GetURLs over every crawl,
  ARGV[8]) places them in `qdue` alone: their crawl's `due` keeps the time it had, earlier than the real one (the
  queue was due), which uf-claim.lua corrects from `qdue` when a GetURLs of that crawl comes to it. So `qdue` is
  exact and a crawl's `due` never later than it.

  KEYS[1..6]   the frontier-wide keys (includes/uf.lua)
  KEYS[7]      the bucket of the holds ending at ARGV[3] (keys.ts urlFrontierHoldBucket)
  KEYS[8..]    per crawl, in ARGV order, its due (unless ARGV[8] is
               1) and per queue its sched and info and, when ARGV[7] is 1, its created, done, held and hdate (keys.ts
               urlFrontierServeKeys)
  ARGV[1]      now (epoch ms)
  ARGV[2]      max URLs per queue (0: no limit), the client's
  ARGV[3]      held until (epoch ms)
  ARGV[4]      cap: the most URLs this call takes from one queue (> 0), so that no call runs long whatever the
               client asks; a queue that gave `cap` URLs is served again with ARGV[5] = 1
  ARGV[5]      1: a continuation of the same GetURLs for queues that gave `cap` URLs (no politeness delay check,
               at most max minus in flight; a queue with a domain override gives nothing more), else 0
  ARGV[6]      ms before a queue of a blacklisted domain is looked at again (the blacklist has no index by queue)
  ARGV[7]      1: each queue's six keys are named, else its first two (most queues need no more: a queue whose
               info says it has metadata, a crawl limit or legacy holds is then left as it is, claimed, and counted
               -1, for the caller to serve again with six)
  ARGV[8]      1: the queues were claimed from `qdue`; their crawls' `due` are not named and not written, else 0
  ARGV[9..]    per crawl, in KEYS order: crawl ID, queue count n, then its n queue keys

  Returns two arrays, over the queues of every crawl in ARGV order: one string per queue (per URL served,
  `<byte length>:<member><byte length>:<metadata JSON, '' for none>`: one bulk reply per queue instead of two per
  URL; empty when the queue is not eligible), and the number of URLs per queue (-1: needs its six keys).
  Answers the error `UFMOVE <message>` and writes nothing while the frontier is fenced (includes/uf.lua fence()).
  Cost: O(served × log n) per queue, served ≤ cap, in a few variadic calls per 500 URLs, and O(log q) for its place
  in `due` and `qdue` and O(1) per hold, written for every queue of the call at once: three commands for a queue
  that gives one URL (its info read, its schedule popped, its info written).
]]
--- @include "uf"

local now = tonumber(ARGV[1])
local max = tonumber(ARGV[2])
local cap = tonumber(ARGV[4])
local continuing = ARGV[5] == '1'
local recheck = tonumber(ARGV[6])
local per_queue = ARGV[7] == '1' and 6 or 2
local qdue_only = ARGV[8] == '1'
-- Times as Redis takes them (strings, see int()): now, the held-until stamp.
local now_s = math.floor(now / 1000)
-- Scheduled URLs a serve pops first (see serve()).
local PROBE = 8
local NOW, UNTIL = ARGV[1], ARGV[3]
-- Frontier-wide, read once per call: the default delay, and whether any domain is blacklisted or overridden (most
-- frontiers have neither, and each queue then skips the lookups).
-- The fence (includes/uf.lua fence()) is read with it: a fenced frontier serves nothing and holds nothing.
local state = redis.call('HMGET', K.state, 'delay', 'fence')
if state[2] then return redis.error_reply(FENCE_ERROR .. ' ' .. state[2]) end
local default_delay = tonumber(state[1] or '1')
local any_black = redis.call('EXISTS', K.black) == 1
local any_cfg = redis.call('EXISTS', K.dcfg) == 1

-- The holds made by this call (members), pushed into its bucket at the end; those moved from legacy keys ('<until>',
-- member, ...), added to `holds` one by one (they end at other times).
local bucket = {}
local moved_holds = {}

-- The earliest time (ms) the queue K points at may produce again, later than now; nil when it will not by itself:
-- nothing scheduled (a release of its holds or a put wakes it), or at the client's max in flight (a release or a
-- completion does). `wait`: a time it must wait for anyway (politeness, block), or nil; `inflight`: its URLs held;
-- `sched`: its earliest scheduled URL's date (s) when known, false when it has none, nil when unknown (then read).
local function next_due(wait, inflight, sched)
  if max > 0 and inflight >= max then return nil end
  if sched == nil then
    local first = redis.call('ZRANGE', K.sched, 0, 0, 'WITHSCORES')
    sched = first[2] or false
  end
  if not sched then return nil end
  local t = tonumber(sched) * 1000
  if wait and wait > t then t = wait end
  -- later than now, so a GetURLs that claims due queues visits each at most once
  return math.max(t, now + 1)
end

-- Moves up to `limit` holds of the queue K points at out of its legacy `held` and `hdate` keys: ended ones back into
-- its schedule (includes/uf.lua release_expired), the others into its info and `holds`. Returns its URLs held once
-- none is left there (its info then says HOLDS_V), else nil.
local function move_legacy_holds(limit)
  local lost = release_expired(NOW, limit)
  local rest = redis.call('ZRANGE', K.held, 0, int(limit - 1), 'WITHSCORES')
  for from = 1, #rest, 1000 do
    local urls = {}
    for j = from, math.min(#rest, from + 999), 2 do urls[#urls + 1] = rest[j] end
    local dates = redis.call('HMGET', K.hdate, unpack(urls))
    local fields, moved = {}, 0
    for j = 1, #urls do
      local url, ends = urls[j], rest[from + 2 * j - 1]
      if dates[j] then
        fields[#fields + 1] = HOLD_FIELD .. url
        fields[#fields + 1] = dates[j] .. ',' .. ends
        moved_holds[#moved_holds + 1] = ends
        moved_holds[#moved_holds + 1] = HPREFIX .. url
        moved = moved + 1
      else
        lost = lost + 1
      end
    end
    redis.call('ZREM', K.held, unpack(urls))
    redis.call('HDEL', K.hdate, unpack(urls))
    if #fields > 0 then redis.call('HSET', K.info, unpack(fields)) end
    redis.call('HINCRBY', K.info, 'held', moved)
  end
  if lost > 0 and counted() then count_backlog(-lost) end
  if redis.call('EXISTS', K.held) == 1 then return nil end
  redis.call('DEL', K.hdate)
  redis.call('HSET', K.info, 'v', HOLDS_V)
  return tonumber(redis.call('HGET', K.info, 'held') or '0')
end

-- The packed URLs of the queue K points at ('' when it may not produce now), their number (-1: it needs its six
-- keys) and the queue's next due time (nil: none).
local function serve()
  local info = redis.call('HMGET', K.info, 'blocked', 'limit', 'last', 'delay', 'dom', 'meta', 'held', 'v')
  local blocked, limit, last, delay = tonumber(info[1]), tonumber(info[2]), tonumber(info[3]), tonumber(info[4])
  -- A queue deleted since it was claimed has no keys left: it serves nothing and leaves `due` (no check needed).
  local inflight = tonumber(info[7]) or 0
  -- Legacy holds only in a queue that produced before its info said HOLDS_V.
  local legacy = last and info[8] ~= HOLDS_V
  local has_meta = info[6] ~= false
  if per_queue == 2 and (legacy or (limit and limit > 0) or has_meta) then return '', -1 end
  if legacy then
    inflight = move_legacy_holds(2 * cap)
    if not inflight then return '', 0, now + 1 end
  end
  if blocked and blocked >= now then return '', 0, next_due(blocked + 1, inflight) end
  local domain = info[5] or QKEY
  if any_black and redis.call('SISMEMBER', K.black, domain) == 1 then
    return '', 0, next_due(now + recheck, inflight)
  end
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
  if cfg and continuing then return '', 0, next_due(polite, inflight) end
  if not continuing and polite and now < polite then return '', 0, next_due(polite, inflight) end
  if max > 0 then
    if inflight >= max then return '', 0, nil end
    if continuing and take > max - inflight then take = max - inflight end
  end
  if take == 0 or take > cap then take = cap end
  -- The first few scheduled URLs (up to `probe` + 1) are popped: the due ones among them are taken, the first one
  -- left says when the queue is due next and goes back with those after it; one call for a queue of a few URLs (the
  -- common case), which the pop leaves with nothing to put back. When all of them are due and more may be taken,
  -- the rest of the due ones are read, and the next time after they are taken.
  local probe = math.min(take, PROBE)
  local head = redis.call('ZPOPMIN', K.sched, int(probe + 1))
  local due, next_sched = {}, false
  local seen_all = #head < 2 * (probe + 1)
  for j = 1, #head, 2 do
    if j > 2 * take or tonumber(head[j + 1]) > now_s then
      next_sched, seen_all = head[j + 1], true
      -- popped but not taken: back into the schedule (at most probe + 1)
      local back = {}
      for b = j, #head, 2 do
        back[#back + 1] = head[b + 1]
        back[#back + 1] = head[b]
      end
      redis.call('ZADD', K.sched, unpack(back))
      break
    end
    due[j], due[j + 1] = head[j], head[j + 1]
  end
  -- due[1 .. popped] left the schedule with the pop; the rest is read, then removed below
  local popped = #due
  if not seen_all then
    local more = redis.call('ZRANGEBYSCORE', K.sched, '-inf', int(now_s), 'WITHSCORES', 'LIMIT', 0,
      int(take - probe - 1))
    for j = 1, #more do due[#due + 1] = more[j] end
    next_sched = nil
  end
  if #due == 0 then return '', 0, next_due(polite, inflight, next_sched) end
  local n = #due / 2
  local out = {}
  -- The info, written once: `last`, the count held, `v`, and a field per URL held (at most cap URLs).
  local fields = { 'last', NOW, 'held', int(inflight + n), 'v', HOLDS_V }
  -- In chunks of at most 500 URLs, one variadic call each (unpack's stack is bounded).
  for from = 1, #due, 1000 do
    local to = math.min(#due, from + 999)
    local urls, unpopped = {}, {}
    for j = from, to, 2 do
      local url = due[j]
      urls[#urls + 1] = url
      if j > popped then unpopped[#unpopped + 1] = url end
      fields[#fields + 1] = HOLD_FIELD .. url
      fields[#fields + 1] = due[j + 1] .. ',' .. UNTIL
      bucket[#bucket + 1] = HPREFIX .. url
    end
    if #unpopped > 0 then redis.call('ZREM', K.sched, unpack(unpopped)) end
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
  redis.call('HSET', K.info, unpack(fields))
  return table.concat(out), n, next_due(now + delay * 1000 + 1, inflight + n, next_sched)
end

-- Where the queues served go in the due indexes, written at the end in one variadic call per index (and per crawl
-- for `due`), not two calls per queue: member -> time (ms, a string), or false to take it out. A table, so a queue
-- named twice ends where its last serve put it, as sequential writes would.
local qdue_at, qdue_order = {}, {}
local due_at, due_order

-- Records the queue K points at for `qdue` (and its crawl's `due` unless this call serves from `qdue` alone) at `t`
-- (epoch ms), or out of them (nil).
local function place(t)
  local v = t and int(t) or false
  if qdue_at[QMEMBER] == nil then qdue_order[#qdue_order + 1] = QMEMBER end
  qdue_at[QMEMBER] = v
  if due_at then
    if due_at[QKEY] == nil then due_order[#due_order + 1] = QKEY end
    due_at[QKEY] = v
  end
end

-- The recorded places as the variadic arguments of ZADD (time, member, ...) and of ZREM (members).
local function places(at, order)
  local add, rem = {}, {}
  for j = 1, #order do
    local m = order[j]
    local t = at[m]
    if t then
      add[#add + 1] = t
      add[#add + 1] = m
    else
      rem[#rem + 1] = m
    end
  end
  return add, rem
end

-- Writes the recorded places into the crawl's `due` and into `qdue`, at most 500 members a call.
local function write_due()
  local add, rem = places(due_at, due_order)
  for from = 1, #add, 1000 do redis.call('ZADD', K.due, unpack(add, from, math.min(#add, from + 999))) end
  for from = 1, #rem, 500 do redis.call('ZREM', K.due, unpack(rem, from, math.min(#rem, from + 499))) end
end

local function write_qdue()
  local add, rem = places(qdue_at, qdue_order)
  for from = 1, #add, 1000 do redis.call('ZADD', K.qdue, unpack(add, from, math.min(#add, from + 999))) end
  for from = 1, #rem, 500 do redis.call('ZREM', K.qdue, unpack(rem, from, math.min(#rem, from + 499))) end
end

local replies, counts = {}, {}
local a = 9 -- the current crawl's ARGV
local k = 8 -- the current crawl's keys
while a <= #ARGV do
  CRAWL = ARGV[a]
  if qdue_only then
    due_at = nil
  else
    K.due = KEYS[k]
    due_at, due_order = {}, {}
    k = k + 1
  end
  local n = tonumber(ARGV[a + 1])
  for q = 1, n do
    local at = k + per_queue * (q - 1)
    K.sched, K.info = KEYS[at], KEYS[at + 1]
    if per_queue == 6 then
      K.created, K.done, K.held, K.hdate = KEYS[at + 2], KEYS[at + 3], KEYS[at + 4], KEYS[at + 5]
    else
      K.created, K.done, K.held, K.hdate = nil, nil, nil, nil
    end
    QKEY = ARGV[a + 1 + q]
    QMEMBER = #CRAWL .. ':' .. CRAWL .. QKEY
    HPREFIX = hold_prefix(CRAWL, QKEY)
    local due, r
    r = #replies + 1
    replies[r], counts[r], due = serve()
    if counts[r] >= 0 then place(due) end
  end
  if due_at then write_due() end
  a = a + 2 + n
  k = k + per_queue * n
end
write_qdue()
for from = 1, #moved_holds, 1000 do
  redis.call('ZADD', K.holds, unpack(moved_holds, from, math.min(#moved_holds, from + 999)))
end
if #bucket > 0 then
  for from = 1, #bucket, 500 do redis.call('RPUSH', KEYS[7], unpack(bucket, from, math.min(#bucket, from + 499))) end
  redis.call('ZADD', K.holds, UNTIL, 'b:' .. UNTIL)
end
return { replies, counts }

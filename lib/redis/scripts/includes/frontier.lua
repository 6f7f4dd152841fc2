--[[
  Shared frontier helpers, included (by the loader, at `--- @include "frontier"`) at the top of every
  frontier script. Every script that includes this declares the 19 partition keys, in the order of
  PartitionKeys in keys.ts, as KEYS[1..19], and the common arguments as ARGV[1..5]:
    ARGV[1] now (epoch ms, or 'T': Redis's TIME)              ARGV[2] default hits     ARGV[3] default window (s)
    ARGV[4] moderated (1|0), optionally ':<throttle margin ms>'
    ARGV[5] ip scoping (1|0): throttle per egress IP, checked at lease time

  A queued request is one member of the lexicographic ZSET K.queue (all scores 0):
    <domain> \0 <pe:2> <seq:8> <ref> <depth> <retries> <tail>
  - pe: P0 - priority in 2 base-62 digits (priority in [-1023, 1024]); seq: 8 base-62 digits. Fixed width
    over an alphabet in ASCII order, so byte order is numeric order: a domain's requests sort by priority
    (high first) then sequence (FIFO), and its best request is one ZRANGEBYLEX away: O(log n).
  - ref, depth, retries: small integers, each self-delimiting (see venc).
  - tail: the URL without its scheme and registrable domain, formatted by the caller (lib/redis/member.ts);
    opaque here.
  The member doubles as the lease handle. build_member / parse_member below are the only places that
  format or read it; member.ts parseMember is the TypeScript side.

  A crawl's record: K.refs <crawl key> -> ref; K.settings ref -> <crawl key:16><first seq:8><spider>\0<JSON>.
  Refs are small numbers (venc), reused after 2^24: a ref is free when it has no record and is not in
  K.finished (a stopped crawl's counters wait there for the sweep). A request belongs to the crawl now
  holding its ref only if its seq is not below the crawl's first seq, so requests a stopped crawl left in
  the queue never come back to life under a later crawl that got the same ref.
]]
local K = {
  queue = KEYS[1], ready = KEYS[2], waiting = KEYS[3], delayed = KEYS[4], leases = KEYS[5],
  throttle = KEYS[6], dcfg = KEYS[7], black = KEYS[8], seq = KEYS[9], refs = KEYS[10],
  settings = KEYS[11], counts = KEYS[12], cidx = KEYS[13], apps = KEYS[14], dcount = KEYS[15],
  expiry = KEYS[16], stopped = KEYS[17], finished = KEYS[18], qtotal = KEYS[19],
}
-- ARGV[1] 'T': the time is Redis's own (TIME), so every crawler's throttle is measured on one clock.
local NOW
if ARGV[1] == 'T' then
  local t = redis.call('TIME')
  NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  NOW = tonumber(ARGV[1])
end
local DEF_HITS = tonumber(ARGV[2])
local DEF_WINDOW = tonumber(ARGV[3])
local MODERATED = string.sub(ARGV[4], 1, 1) == '1'
-- Added to every throttle window (ms, in total over the window; ARGV[4] '<moderated>:<margin>'): a fetch reaches
-- the site a few ms after its lease, by a varying amount, so spacing leases exactly window / hits apart could put
-- hits + 1 arrivals in one window. Spread over the window's hits it costs the rate margin / window (100 ms at
-- 10 per 60 s: 0.17%).
local MARGIN_MS = tonumber(string.match(ARGV[4], ':(%d+)$')) or 0
local IP_MODE = ARGV[5] == '1'

local P0 = 1024
local NEVER = 9007199254740991
-- Ready scores: (P0 - priority) * 2^42 + seq mod 2^42, exact below 2^53.
local TWO42 = 4398046511104
local REF_LIMIT = 16777216

-- Base 62 in ASCII order: 0-9 A-Z a-z (digit values from byte codes by arithmetic: no tables to build).
local function d62(b)
  if b < 58 then return b - 48 end
  if b < 91 then return b - 55 end
  return b - 61
end

local function c62(d)
  if d < 10 then return d + 48 end
  if d < 36 then return d + 55 end
  return d + 61
end

-- n in exactly `width` (<= 8) base-62 digits.
local function b62(n, width)
  local d1, d2, d3, d4, d5, d6, d7, d8
  d8 = n % 62; n = (n - d8) / 62
  d7 = n % 62; n = (n - d7) / 62
  if width == 2 then return string.char(c62(d7), c62(d8)) end
  d6 = n % 62; n = (n - d6) / 62
  d5 = n % 62; n = (n - d5) / 62
  d4 = n % 62; n = (n - d4) / 62
  d3 = n % 62; n = (n - d3) / 62
  d2 = n % 62; n = (n - d2) / 62
  d1 = n % 62
  local s = string.char(c62(d1), c62(d2), c62(d3), c62(d4), c62(d5), c62(d6), c62(d7), c62(d8))
  if width == 8 then return s end
  return string.sub(s, 9 - width)
end

local function b62_num(s, i, j)
  local n = 0
  for k = i or 1, j or #s do n = n * 62 + d62(string.byte(s, k)) end
  return n
end

-- A small non-negative integer, self-delimiting: one digit for 0..60, else 'z' <base 62> '.'.
local function venc(n)
  if n < 61 then return string.char(c62(n)) end
  if n >= 218340105584896 then return error('ERR frontier integer too large: ' .. n) end
  local width = 1
  while 62 ^ width <= n do width = width + 1 end
  return 'z' .. b62(n, width) .. '.'
end

-- The encoded integer at position i of s: its text and the position after it.
local function vtext(s, i)
  if string.byte(s, i) ~= 122 then return string.sub(s, i, i), i + 1 end
  local j = string.find(s, '.', i + 1, true)
  return string.sub(s, i, j), j + 1
end

local function vnum(t)
  if #t == 1 then return d62(string.byte(t)) end
  return b62_num(t, 2, #t - 1)
end

local function clamp_prio(p)
  if p > 1024 then return 1024 end
  if p < -1023 then return -1023 end
  return p
end

local function prio_enc(prio)
  return b62(P0 - prio, 2)
end

local function seq_enc(n)
  if n >= 218340105584896 then return error('ERR frontier sequence numbers exhausted (62^8)') end
  return b62(n, 8)
end

-- The member of a request, and its pe (the priority as encoded in it).
local function build_member(domain, prio, seq, ref, depth, retries, tail)
  local pe = prio_enc(prio)
  return domain .. '\0' .. pe .. seq_enc(seq) .. ref .. venc(depth) .. venc(retries) .. tail, pe
end

local function parse_member(m)
  local i = string.find(m, '\0', 1, true)
  local pe = string.sub(m, i + 1, i + 2)
  local ref, depth, retries, p
  ref, p = vtext(m, i + 11)
  depth, p = vtext(m, p)
  retries, p = vtext(m, p)
  return {
    domain = string.sub(m, 1, i - 1),
    pe = pe,
    prio = P0 - b62_num(pe, 1, 2),
    seq = string.sub(m, i + 3, i + 10),
    ref = ref,
    depth = vnum(depth),
    retries = vnum(retries),
    tail = string.sub(m, p),
  }
end

-- Numeric order of (priority desc, seq asc) for the ready set.
local function ready_score(prio, seq)
  return (P0 - prio) * TWO42 + seq % TWO42
end

local function member_score(m)
  local i = string.find(m, '\0', 1, true)
  return b62_num(m, i + 1, i + 2) * TWO42 + b62_num(m, i + 3, i + 10) % TWO42
end

local function domain_head(domain)
  return redis.call('ZRANGEBYLEX', K.queue, '[' .. domain .. '\0', '(' .. domain .. '\1', 'LIMIT', 0, 1)[1]
end

-- Effective throttle of a domain: override hits x scale per window, else the defaults. Read once per script call
-- and domain (a lease reads it for the domain it takes and again when it reschedules that domain); only
-- domain-config.lua changes K.dcfg, and it reads the override it has just written.
local DCFG = {}
local function throttle_config(domain)
  local c = DCFG[domain]
  if not c then
    c = {DEF_HITS, DEF_WINDOW}
    local cfg = redis.call('HGET', K.dcfg, domain)
    if cfg then
      local h, w, s = string.match(cfg, '^(%d+),(%d+),([%d%.]+)$')
      if h then c = {math.floor(tonumber(h) * tonumber(s) + 1e-9), tonumber(w)} end
    end
    DCFG[domain] = c
  end
  return c[1], c[2]
end

-- Fields of K.throttle beside the throttle states: a domain held until (epoch ms; Retry-After), and a domain's
-- robots.txt Crawl-delay (ms; a minimum spacing of its fetches).
local function hold_field(domain) return domain .. '\0hold' end
local function delay_field(domain) return domain .. '\0cd' end

-- A throttle key's state in K.throttle: its fetch times (epoch ms) ascending, LOG_W digits each (zero padded), no
-- separators: the last fetch (moderated) or a sliding-window log (not moderated). A lease reads the entries it
-- needs by position and finds where to cut or insert by binary search, so its cost does not grow with the log (a
-- domain allowed 100,000 fetches per window would otherwise parse and rewrite thousands of entries on every lease).
-- States in the comma-separated form ('t1,t2,...') are read too.
local LOG_W = 13
local function log_fmt(t) return string.format('%013d', t) end
local function log_norm(state)
  if #state % LOG_W == 0 and not string.find(state, ',', 1, true) then return state end
  local out = {}
  for t in string.gmatch(state, '%d+') do out[#out + 1] = log_fmt(tonumber(t)) end
  return table.concat(out)
end
local function log_len(log) return #log / LOG_W end
local function log_at(log, i) return tonumber(string.sub(log, (i - 1) * LOG_W + 1, i * LOG_W)) end
-- Entries a..b of a log (empty when b < a).
local function log_sub(log, a, b) return string.sub(log, (a - 1) * LOG_W + 1, b * LOG_W) end
-- The first index in [lo, hi] whose time is later than t (hi + 1: none is).
local function log_after(log, t, lo, hi)
  hi = hi + 1
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if log_at(log, mid) > t then hi = mid else lo = mid + 1 end
  end
  return lo
end
-- How many of a log's n entries are at its last time `last`: all of them when the first one is (a moderated log keeps
-- only the fetches of one ms, so that is the common case and costs one read), else found by binary search.
local function count_at_last(log, n, last)
  if log_at(log, 1) == last then return n end
  return n - log_after(log, last - 1, 1, n) + 1
end

-- Fetches a moderated throttle allows in one ms (times are whole ms): floor(hits / (window + margin + 1 ms)), so
-- that any window, which holds at most window + 1 distinct ms, holds at most hits fetches; at most PER_MS_MAX.
-- 1 for every throttle of at most one fetch per ms (all but the widest open: 100,000 per s with the 100 ms margin
-- allows 90, so 64).
local PER_MS_MAX = 64
local function per_ms(hits, wms) return math.min(math.floor(hits / (wms + 1)), PER_MS_MAX) end

-- When the throttle key next allows a fetch (<= NOW: allowed now).
-- Moderated: fetches evenly spaced (window + margin) / hits apart, rounded up (rounding down would let
-- hits + 1 fetches into one window when hits does not divide it, e.g. 3 per 2 s at 0, 666, 1332, 1998 ms);
-- a throttle that allows more than one per ms (per_ms) takes up to per_ms in the same ms, then waits 1 ms.
-- Not moderated: a sliding-window log of the last `hits` fetch times.
-- Either way at least the domain's Crawl-delay (plus the margin: a fetch may start up to restamp's 50 ms late)
-- after the last fetch, and not before a Retry-After hold ends.
local function throttle_due(tkey, domain)
  local hits, window = throttle_config(domain)
  if hits <= 0 then return NEVER end
  local f = redis.call('HMGET', K.throttle, tkey, hold_field(domain), delay_field(domain))
  local state, hold, crawl_delay = f[1], tonumber(f[2]), tonumber(f[3]) or 0
  local due = 0
  if state then
    local wms = window * 1000 + MARGIN_MS
    local log = log_norm(state)
    local n = log_len(log)
    if n > 0 then
      local last = log_at(log, n)
      if MODERATED then
        due = last + math.max(math.ceil(wms / hits), crawl_delay > 0 and crawl_delay + MARGIN_MS or 0)
        -- More than one fetch per ms allowed: the ms of the last fetch still has room.
        local room = crawl_delay == 0 and per_ms(hits, wms) or 0
        if room > 1 and count_at_last(log, n, last) < room then due = last end
      else
        if n >= hits then due = log_at(log, n - hits + 1) + wms end
        if crawl_delay > 0 then due = math.max(due, last + crawl_delay + MARGIN_MS) end
      end
    end
  end
  if hold then
    if hold > NOW then
      due = math.max(due, hold)
    else
      redis.call('HDEL', K.throttle, hold_field(domain))
    end
  end
  return due
end

-- Records a fetch of tkey at `at` (epoch ms; NOW unless given): NOW for a lease, later for a fetch restamp.lua
-- moved to when it really starts. The sliding-window log stays sorted (a moved fetch may be later than a lease
-- made after it) and keeps the last `hits` times, less those that can no longer matter: older than one window
-- (plus margin) before NOW (the fetch recorded now is the latest, which a Crawl-delay counts from). So a log
-- holds at most the fetches of one window. Cost: O(log n) comparisons and one copy of the kept log.
local function throttle_hit(tkey, domain, at)
  at = at or NOW
  if MODERATED then
    -- The last fetch's time, repeated once per fetch in that ms (more than one only where per_ms allows).
    local state = redis.call('HGET', K.throttle, tkey)
    local log = state and log_norm(state) or ''
    local n = log_len(log)
    if n > 0 and log_at(log, n) == at then
      redis.call('HSET', K.throttle, tkey, log_sub(log, n - count_at_last(log, n, at) + 1, n) .. log_fmt(at))
    else
      redis.call('HSET', K.throttle, tkey, log_fmt(at))
    end
    return
  end
  local hits, window = throttle_config(domain)
  local cutoff = NOW - (window * 1000 + MARGIN_MS)
  local state = redis.call('HGET', K.throttle, tkey)
  local log = state and log_norm(state) or ''
  local n = log_len(log)
  local first = log_after(log, cutoff, 1, n) -- those before it are out of the window
  local pos = log_after(log, at, first, n) -- `at` goes before the first later fetch (a restamped one)
  -- The kept entries with `at` in place, less the oldest beyond `hits`.
  local drop = math.max(0, (n - first + 2) - hits)
  local kept
  if drop <= pos - first then
    kept = log_sub(log, first + drop, pos - 1) .. log_fmt(at) .. log_sub(log, pos, n)
  else
    kept = log_sub(log, first + drop - 1, n)
  end
  redis.call('HSET', K.throttle, tkey, kept)
end

-- Puts a domain where it belongs now: ready (with its best request's score), waiting (until its
-- throttle allows), or nowhere (no work, or blacklisted: its requests stay queued).
local function schedule(domain)
  if redis.call('SISMEMBER', K.black, domain) == 1 then
    redis.call('ZREM', K.ready, domain)
    redis.call('ZREM', K.waiting, domain)
    return
  end
  local head = domain_head(domain)
  if not head then
    redis.call('ZREM', K.ready, domain)
    redis.call('ZREM', K.waiting, domain)
    return
  end
  local due = 0
  if not IP_MODE then due = throttle_due(domain, domain) end
  if due <= NOW then
    redis.call('ZREM', K.waiting, domain)
    redis.call('ZADD', K.ready, member_score(head), domain)
  else
    redis.call('ZREM', K.ready, domain)
    redis.call('ZADD', K.waiting, due, domain)
  end
end

-- A waiting domain whose due time has passed: ready again with its best request's score. Its throttle is not read
-- again here: lease checks the throttle of the ready domain it takes (and parks it again when something tightened
-- since it was parked, e.g. a Crawl-delay), so promoting costs no throttle reads.
local function promote(domain)
  if redis.call('SISMEMBER', K.black, domain) == 1 then
    redis.call('ZREM', K.waiting, domain)
    return
  end
  local head = domain_head(domain)
  redis.call('ZREM', K.waiting, domain)
  if head then redis.call('ZADD', K.ready, member_score(head), domain) end
end

-- Per-crawl counters for info and stop live in K.cidx, one ZSET whose score packs the crawl's ref number
-- and the count: score = refnum * CB + count. Members: `<ref>\0<domain>\0<pe>` (queued per domain and
-- priority) and `<ref>\0<domain>` (pages ever queued, for domain_max_pages). A crawl's counters are the
-- score range [refnum * CB, refnum * CB + CB - 1]: one ZRANGEBYSCORE reads them, one ZREMRANGEBYSCORE
-- drops them. Exact while refnum < 2^24 and a count < CB = 2^29 (doubles are exact below 2^53).
local CB = 536870912

-- Adds `by` to a crawl counter in K.cidx (created at its first increment, removed at 0); returns the count.
local function cidx_add(refnum, f, by)
  local base = refnum * CB
  local s = tonumber(redis.call('ZINCRBY', K.cidx, by, f))
  if s < base then
    -- The member was new (ZINCRBY started it at 0): give it the crawl's base.
    if by > 0 then redis.call('ZADD', K.cidx, base + by, f) else redis.call('ZREM', K.cidx, f) end
    return by
  end
  local n = s - base
  if n <= 0 then redis.call('ZREM', K.cidx, f) end
  return n
end

-- The count of a crawl counter in K.cidx (0 when absent).
local function cidx_get(refnum, f)
  local s = redis.call('ZSCORE', K.cidx, f)
  if not s then return 0 end
  return tonumber(s) - refnum * CB
end

-- The K.cidx member counting a crawl's queued requests in a domain at a priority.
local function queued_field(ref, domain, pe)
  return ref .. '\0' .. domain .. '\0' .. pe
end

-- Whether K.qtotal (the sum of K.dcount) is kept: it is once it exists, and in a partition with no K.dcount yet.
-- A partition written before the total existed has K.dcount and no K.qtotal: nothing is added until
-- backlog-total.lua adds it up. Asked before this script changes K.dcount (the answer is remembered for the call).
local qtotal_kept
local function total_kept()
  if qtotal_kept == nil then
    qtotal_kept = redis.call('EXISTS', K.qtotal) == 1 or redis.call('EXISTS', K.dcount) == 0
  end
  return qtotal_kept
end

-- Adds `by` to K.qtotal when it is kept (total_kept must have been asked before K.dcount changed).
local function add_total(by)
  if by ~= 0 and qtotal_kept then redis.call('INCRBY', K.qtotal, by) end
end

-- Counters of queued requests (queued + delayed): per crawl/domain/priority for info, per crawl, per domain, and
-- the total. A domain's count is dropped at 0 (never kept below), so the total moves by what the domain's did.
local function count_queued(r, by)
  cidx_add(vnum(r.ref), queued_field(r.ref, r.domain, r.pe), by)
  redis.call('HINCRBY', K.counts, r.ref .. '\0q', by)
  total_kept()
  local n = redis.call('HINCRBY', K.dcount, r.domain, by)
  if n <= 0 then
    redis.call('HDEL', K.dcount, r.domain)
    add_total(by - n)
  else
    add_total(by)
  end
end

-- The crawl record of a ref: its settings value, or nil.
local function crawl_record(ref)
  return redis.call('HGET', K.settings, ref)
end

-- Whether the request r belongs to a live crawl: its ref is held and r is not older than the holder.
local function alive_in(record, r)
  return record ~= nil and record ~= false and r.seq >= string.sub(record, 17, 24)
end

local function crawl_alive(r)
  return alive_in(crawl_record(r.ref), r)
end

-- The parts of a crawl record.
local function record_key(record) return string.sub(record, 1, 16) end
local function record_spider(record) return string.sub(record, 25, string.find(record, '\0', 25, true) - 1) end
local function record_settings(record) return string.sub(record, string.find(record, '\0', 25, true) + 1) end

-- A crawl's entry in K.apps: <spider> \0 <appid> \0 <ref>, or nil when the settings do not decode (a record
-- written before requests were checked for well-formed Unicode: cjson refuses lone surrogates). A decode
-- error must not abort the caller half-way (Lua errors roll nothing back), so it is caught here.
local function app_member(record, ref)
  local ok, settings = pcall(cjson.decode, record_settings(record))
  if not ok or type(settings) ~= 'table' or type(settings.appid) ~= 'string' then return nil end
  return record_spider(record) .. '\0' .. settings.appid .. '\0' .. ref
end

-- Removes a crawl's records: settings, ref, app index entry, expiry entry, crawl counters. Not its
-- per-domain counters in K.cidx (settled by sweep-finished.lua in bounded chunks), nor its queued requests
-- (dropped when a lease meets them: lazy purge), nor its dupefilter (a key of its own, the caller's).
local function drop_crawl(ref, record)
  local member = app_member(record, ref)
  redis.call('HDEL', K.counts, ref .. '\0q', ref .. '\0l', ref .. '\0done', ref .. '\0fail', ref .. '\0maxp')
  local ckey = record_key(record)
  if redis.call('HGET', K.refs, ckey) == ref then redis.call('HDEL', K.refs, ckey) end
  if member then redis.call('ZREM', K.apps, member) end
  redis.call('HDEL', K.settings, ref)
  redis.call('ZREM', K.expiry, ref)
end

-- Puts a leased (or reclaimed) request back in its queue, unchanged: it keeps its FIFO place.
-- The member a request has after k reclaims: reclaim counts one retry each and keeps everything else (its
-- priority and FIFO place), so a late ack can still find a reclaimed request from its old handle.
local RECLAIM_LOOKAHEAD = 8
local function reclaimed_member(r, k)
  return (build_member(r.domain, r.prio, b62_num(r.seq, 1, 8), r.ref, r.depth, r.retries + k, r.tail))
end

local function requeue(m, r)
  if not crawl_alive(r) then return 0 end
  redis.call('ZADD', K.queue, 0, m)
  count_queued(r, 1)
  redis.call('HINCRBY', K.counts, r.ref .. '\0l', -1)
  schedule(r.domain)
  return 1
end

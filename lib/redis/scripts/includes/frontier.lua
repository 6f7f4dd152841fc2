--[[
  Shared frontier helpers, included (by the loader, at `--- @include "frontier"`) at the top of every
  frontier script. Every script that includes this declares the 17 partition keys, in the order of
  PartitionKeys in keys.ts, as KEYS[1..17], and the common arguments as ARGV[1..5]:
    ARGV[1] now (epoch ms)      ARGV[2] default hits     ARGV[3] default window (s)
    ARGV[4] moderated (1|0)     ARGV[5] ip scoping (1|0): throttle per egress IP, checked at lease time

  A queued request is one member of the lexicographic ZSET K.queue (all scores 0):
    <domain> \0 <prio:4><seq:13> \0 <crawl ref> \0 <depth> \0 <retries> \0 <url>
  so a domain's requests sort by priority (high first) then sequence (FIFO), and a domain's best request
  is one ZRANGEBYLEX away: O(log n). The member doubles as the lease handle.
]]
local K = {
  queue = KEYS[1], ready = KEYS[2], waiting = KEYS[3], delayed = KEYS[4], leases = KEYS[5],
  throttle = KEYS[6], dcfg = KEYS[7], black = KEYS[8], seq = KEYS[9], refs = KEYS[10],
  settings = KEYS[11], counts = KEYS[12], cidx = KEYS[13], apps = KEYS[14], dcount = KEYS[15],
  expiry = KEYS[16], stopped = KEYS[17],
}
local NOW = tonumber(ARGV[1])
local DEF_HITS = tonumber(ARGV[2])
local DEF_WINDOW = tonumber(ARGV[3])
local MODERATED = ARGV[4] == '1'
local IP_MODE = ARGV[5] == '1'

-- Priorities are stored as P0 - prio in 4 digits: prio in [-1023, 1024].
local P0 = 1024
local TWO40 = 1099511627776
local NEVER = 9007199254740991

local function clamp_prio(p)
  if p > 1024 then return 1024 end
  if p < -1023 then return -1023 end
  return p
end

local function prio_enc(prio)
  return string.format('%04d', P0 - prio)
end

local function build_member(domain, prio, seq, ref, depth, retries, url)
  return domain .. '\0' .. prio_enc(prio) .. string.format('%013d', seq) .. '\0' .. ref .. '\0' ..
    depth .. '\0' .. retries .. '\0' .. url
end

local function parse_member(m)
  local i = string.find(m, '\0', 1, true)
  local pe = string.sub(m, i + 1, i + 4)
  local k = string.find(m, '\0', i + 19, true)
  local l = string.find(m, '\0', k + 1, true)
  local n = string.find(m, '\0', l + 1, true)
  return {
    domain = string.sub(m, 1, i - 1),
    pe = pe,
    prio = P0 - tonumber(pe),
    seq = tonumber(string.sub(m, i + 5, i + 17)),
    ref = string.sub(m, i + 19, k - 1),
    depth = tonumber(string.sub(m, k + 1, l - 1)),
    retries = tonumber(string.sub(m, l + 1, n - 1)),
    url = string.sub(m, n + 1),
  }
end

-- Numeric order of (priority desc, seq asc): fits a double exactly (< 2^51).
local function member_score(m)
  local i = string.find(m, '\0', 1, true)
  return tonumber(string.sub(m, i + 1, i + 4)) * TWO40 + tonumber(string.sub(m, i + 5, i + 17))
end

local function domain_head(domain)
  return redis.call('ZRANGEBYLEX', K.queue, '[' .. domain .. '\0', '(' .. domain .. '\1', 'LIMIT', 0, 1)[1]
end

-- Effective throttle of a domain: override hits x scale per window, else the defaults.
local function throttle_config(domain)
  local cfg = redis.call('HGET', K.dcfg, domain)
  if cfg then
    local h, w, s = string.match(cfg, '^(%d+),(%d+),([%d%.]+)$')
    if h then return math.floor(tonumber(h) * tonumber(s) + 1e-9), tonumber(w) end
  end
  return DEF_HITS, DEF_WINDOW
end

-- When the throttle key next allows a fetch (<= NOW: allowed now).
-- Moderated: fetches evenly spaced window/hits apart, rounded up (rounding down would let hits + 1
-- fetches into one window when hits does not divide it, e.g. 3 per 2 s at 0, 666, 1332, 1998 ms).
-- Not moderated: a sliding-window log of the last `hits` fetch times.
local function throttle_due(tkey, domain)
  local hits, window = throttle_config(domain)
  if hits <= 0 then return NEVER end
  local state = redis.call('HGET', K.throttle, tkey)
  if not state then return 0 end
  local wms = window * 1000
  if MODERATED then
    local last = tonumber(string.match(state, '(%d+)$'))
    return last + math.ceil(wms / hits)
  end
  local times = {}
  for t in string.gmatch(state, '%d+') do times[#times + 1] = tonumber(t) end
  if #times < hits then return 0 end
  return times[#times - hits + 1] + wms
end

local function throttle_hit(tkey, domain)
  if MODERATED then
    redis.call('HSET', K.throttle, tkey, NOW)
    return
  end
  local hits = throttle_config(domain)
  local state = redis.call('HGET', K.throttle, tkey)
  local times = {}
  if state then for t in string.gmatch(state, '%d+') do times[#times + 1] = t end end
  times[#times + 1] = tostring(NOW)
  local first = math.max(1, #times - hits + 1)
  redis.call('HSET', K.throttle, tkey, table.concat(times, ',', first, #times))
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

-- Counters of queued requests (queued + delayed): per crawl/domain/priority for info, per crawl, per domain.
local function count_queued(r, by)
  local f = r.ref .. '\0' .. r.domain .. '\0' .. r.pe
  local n = redis.call('HINCRBY', K.counts, f, by)
  if n <= 0 then
    redis.call('HDEL', K.counts, f)
    redis.call('ZREM', K.cidx, f)
  elseif by > 0 and n == by then
    redis.call('ZADD', K.cidx, 0, f)
  end
  redis.call('HINCRBY', K.counts, r.ref .. '\0q', by)
  if redis.call('HINCRBY', K.dcount, r.domain, by) <= 0 then redis.call('HDEL', K.dcount, r.domain) end
end

local function crawl_alive(ref)
  return redis.call('HEXISTS', K.settings, ref) == 1
end

-- Puts a leased (or reclaimed) request back in its queue, unchanged: it keeps its FIFO place.
local function requeue(m, r)
  if not crawl_alive(r.ref) then return 0 end
  redis.call('ZADD', K.queue, 0, m)
  count_queued(r, 1)
  redis.call('HINCRBY', K.counts, r.ref .. '\0l', -1)
  schedule(r.domain)
  return 1
end

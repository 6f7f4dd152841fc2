--[[
  Queue info for crawls, from counters (never a queue scan), a bounded page per call.

  KEYS[1..19]  partition keys (includes/frontier.lua)
  ARGV[1..5]   common frontier arguments
  ARGV[6]      'crawl' (ARGV[7] = crawl key), 'app' (ARGV[7] = appid), or 'counters' (ARGV[7] = a crawl ref: more
               of its counters)
  ARGV[8]      spider type (mode 'app': only that spider type's crawls of the app)
  ARGV[9]      at most this many counters per call
  ARGV[10]     mode 'app': at most this many crawls per call
  ARGV[11]     mode 'app': the app index entry to continue after ('' from the first); mode 'counters': how many of
               the crawl's counters were read already

  Modes 'crawl' and 'app' return {cursor, crawl, ...}: cursor is the app index entry to continue after ('' when no
  crawl is left), each crawl {settings JSON, queued, leased, done, failed, base, counters, ref, read, more, waits}: counters
  is the first `read` entries of the crawl's K.cidx range as one string, member \1 score \1 member \1 score ...,
  read by one ZRANGE and joined by table.concat, so the script does no per-entry work (the caller decodes it:
  crawl-info.ts decodeCounters; queued count = score - base; members without a priority are page-cap counters);
  more = 1 when the range holds more, which mode 'counters' reads. Mode 'counters' returns {counters, read, more}.
  Each crawl also has waits (mode 'crawl' only, else empty): why its queued requests are not leased now, from
  bounded reads: {throttled domains, earliest due (ms, 0: none), retrying requests, earliest retry due (ms, 0: none),
  retries of that request}: a domain of the crawl (of its first WAIT_DOMAINS counters) parked in K.waiting (throttle
  or a Retry-After hold), and its requests among the WAIT_DELAYED earliest of K.delayed (waiting for a retry).
  Cost of waits: O(WAIT_DOMAINS x log n + WAIT_DELAYED).
  Cost: O(log n) per crawl plus the counters returned: at most ARGV[9] counters and ARGV[10] crawls per call.
]]
--- @include "frontier"

local budget = tonumber(ARGV[9])

local WAIT_DOMAINS = 64
local WAIT_DELAYED = 100

local function crawl_waits(ref, entries)
  local seen, throttled, throttle_due = {}, 0, 0
  for i = 1, math.min(#entries, WAIT_DOMAINS * 2), 2 do
    local e = entries[i]
    local a = string.find(e, '\0', 1, true)
    local b = a and string.find(e, '\0', a + 1, true)
    local domain = a and string.sub(e, a + 1, (b or #e + 1) - 1)
    if domain and not seen[domain] then
      seen[domain] = true
      local due = tonumber(redis.call('ZSCORE', K.waiting, domain))
      if due and due > NOW then
        throttled = throttled + 1
        if throttle_due == 0 or due < throttle_due then throttle_due = due end
      end
    end
  end
  local retrying, retry_due, retries = 0, 0, 0
  local delayed = redis.call('ZRANGE', K.delayed, 0, WAIT_DELAYED - 1, 'WITHSCORES')
  for i = 1, #delayed, 2 do
    local r = parse_member(delayed[i])
    if r.ref == ref then
      retrying = retrying + 1
      if retrying == 1 then
        retry_due = tonumber(delayed[i + 1])
        retries = r.retries
      end
    end
  end
  return {throttled, throttle_due, retrying, retry_due, retries}
end

-- Up to `n` of a crawl's counters from its `from`-th (0-based), found by rank (ZCOUNT), so no call walks past
-- counters it does not return. Returns them packed, how many, and whether the crawl has more (1|0).
local function counters(ref, from, n)
  local base = vnum(ref) * CB
  local lo, hi = string.format('%.0f', base), string.format('%.0f', base + CB - 1)
  local size = redis.call('ZCOUNT', K.cidx, lo, hi)
  local last = math.min(size, from + n) - 1
  if last < from then
    if from < size then return '', 0, 1, {} end
    return '', 0, 0, {}
  end
  local first = redis.call('ZCOUNT', K.cidx, '-inf', '(' .. lo)
  local entries = redis.call('ZRANGE', K.cidx, first + from, first + last, 'WITHSCORES')
  local read = #entries / 2
  local more = 0
  if from + read < size then more = 1 end
  return table.concat(entries, '\1'), read, more, entries
end

local function crawl_info(ref, n, with_waits)
  local record = crawl_record(ref)
  if not record then return nil end
  local c = redis.call('HMGET', K.counts, ref .. '\0q', ref .. '\0l', ref .. '\0done', ref .. '\0fail')
  local packed, read, more, entries = counters(ref, 0, n)
  return {
    record_settings(record), tonumber(c[1] or 0), tonumber(c[2] or 0), tonumber(c[3] or 0), tonumber(c[4] or 0),
    vnum(ref) * CB, packed, ref, read, more, with_waits and crawl_waits(ref, entries) or {},
  }
end

if ARGV[6] == 'counters' then
  local packed, read, more = counters(ARGV[7], tonumber(ARGV[11]), budget)
  return {packed, read, more}
end

local out = {''}
if ARGV[6] == 'crawl' then
  local ref = redis.call('HGET', K.refs, ARGV[7])
  if ref then out[2] = crawl_info(ref, budget, true) end
else
  local max_crawls = tonumber(ARGV[10])
  local prefix = ARGV[8] .. '\0' .. ARGV[7]
  local from = '[' .. prefix .. '\0'
  if ARGV[11] ~= '' then from = '(' .. ARGV[11] end
  local entries = redis.call('ZRANGEBYLEX', K.apps, from, '(' .. prefix .. '\1', 'LIMIT', 0, max_crawls)
  local last, cut = nil, false
  for _, e in ipairs(entries) do
    if budget <= 0 then
      cut = true
      break
    end
    local info = crawl_info(string.sub(e, #prefix + 2), budget, false)
    if info then
      out[#out + 1] = info
      budget = budget - info[9]
    end
    last = e
  end
  if last and (cut or #entries == max_crawls) then out[1] = last end
end
return out

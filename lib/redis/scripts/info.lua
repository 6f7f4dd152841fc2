--[[
  Queue info for crawls, from counters (never a queue scan).

  KEYS[1..18]  partition keys (includes/frontier.lua)
  ARGV[1..5]   common frontier arguments
  ARGV[6]      'crawl' (ARGV[7] = crawl key) or 'app' (ARGV[7] = appid)
  ARGV[8]      spider type (mode 'app': only that spider type's crawls of the app)

  Returns a list of crawls, each {settings JSON, queued, leased, done, failed, base, counters, waits}: counters is the
  crawl's K.cidx range as one string, member \1 score \1 member \1 score ..., read by one ZRANGEBYSCORE and
  joined by table.concat, so the script does no per-entry work; the caller decodes it (crawl-info.ts
  decodeCounters: queued count = score - base; members without a priority are page-cap counters).
  Cost: O(domains x priorities) per crawl, all of it in two C-level calls.
  waits (mode 'crawl' only, else empty): why its queued requests are not leased now, from bounded reads:
    {throttled domains, earliest due (ms, 0: none), retrying requests, earliest retry due (ms, 0: none), retries
    of that request}: a domain of the crawl (of its first WAIT_DOMAINS counters) parked in K.waiting (throttle
    or a Retry-After hold), and its requests among the WAIT_DELAYED earliest of K.delayed (waiting for a retry).
    Cost: O(WAIT_DOMAINS x log n + WAIT_DELAYED).
]]
--- @include "frontier"

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

local function crawl_info(ref, with_waits)
  local record = crawl_record(ref)
  if not record then return nil end
  local base = vnum(ref) * CB
  local entries = redis.call('ZRANGEBYSCORE', K.cidx, base, base + CB - 1, 'WITHSCORES')
  local c = redis.call('HMGET', K.counts, ref .. '\0q', ref .. '\0l', ref .. '\0done', ref .. '\0fail')
  return {
    record_settings(record), tonumber(c[1] or 0), tonumber(c[2] or 0), tonumber(c[3] or 0), tonumber(c[4] or 0),
    base, table.concat(entries, '\1'), with_waits and crawl_waits(ref, entries) or {},
  }
end

local out = {}
if ARGV[6] == 'crawl' then
  local ref = redis.call('HGET', K.refs, ARGV[7])
  if ref then out[1] = crawl_info(ref, true) end
else
  local prefix = ARGV[8] .. '\0' .. ARGV[7]
  for _, e in ipairs(redis.call('ZRANGEBYLEX', K.apps, '[' .. prefix .. '\0', '(' .. prefix .. '\1')) do
    local info = crawl_info(string.sub(e, #prefix + 2), false)
    if info then out[#out + 1] = info end
  end
end
return out

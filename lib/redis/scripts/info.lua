--[[
  Queue info for crawls, from counters (never a queue scan).

  KEYS[1..19]  partition keys (includes/frontier.lua)
  ARGV[1..5]   common frontier arguments
  ARGV[6]      'crawl' (ARGV[7] = crawl key) or 'app' (ARGV[7] = appid)
  ARGV[8]      spider type (mode 'app': only that spider type's crawls of the app)

  Returns a list of crawls, each {settings JSON, queued, leased, done, failed, base, counters}: counters is the
  crawl's K.cidx range as one string, member \1 score \1 member \1 score ..., read by one ZRANGEBYSCORE and
  joined by table.concat, so the script does no per-entry work; the caller decodes it (crawl-info.ts
  decodeCounters: queued count = score - base; members without a priority are page-cap counters).
  Cost: O(domains x priorities) per crawl, all of it in two C-level calls.
]]
--- @include "frontier"

local function crawl_info(ref)
  local record = crawl_record(ref)
  if not record then return nil end
  local base = vnum(ref) * CB
  local entries = redis.call('ZRANGEBYSCORE', K.cidx, base, base + CB - 1, 'WITHSCORES')
  local c = redis.call('HMGET', K.counts, ref .. '\0q', ref .. '\0l', ref .. '\0done', ref .. '\0fail')
  return {
    record_settings(record), tonumber(c[1] or 0), tonumber(c[2] or 0), tonumber(c[3] or 0), tonumber(c[4] or 0),
    base, table.concat(entries, '\1'),
  }
end

local out = {}
if ARGV[6] == 'crawl' then
  local ref = redis.call('HGET', K.refs, ARGV[7])
  if ref then out[1] = crawl_info(ref) end
else
  local prefix = ARGV[8] .. '\0' .. ARGV[7]
  for _, e in ipairs(redis.call('ZRANGEBYLEX', K.apps, '[' .. prefix .. '\0', '(' .. prefix .. '\1')) do
    local info = crawl_info(string.sub(e, #prefix + 2))
    if info then out[#out + 1] = info end
  end
end
return out

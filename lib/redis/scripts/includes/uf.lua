--[[
  URL frontier (lib/url-frontier): the keys of one queue and the helpers its scripts share.

  KEYS[1]  crawls   SET of crawl IDs
  KEYS[2]  state    HASH active, delay, seq
  KEYS[3]  queues   ZSET the crawl's queue keys (score 0)
  KEYS[4]  rot      ZSET queue key -> rotation sequence
  KEYS[5]  created  HASH url -> '<creation date (s)>[\t<metadata JSON>]'
  (every url here is a member: lib/url-frontier/store.ts urlMember, the queue's host prefix cut off)
  KEYS[6]  sched    ZSET url -> next-fetch date (s), not held
  KEYS[7]  held     ZSET url -> held until (ms)
  KEYS[8]  hdate    HASH url -> next-fetch date of a held URL
  KEYS[9]  done     SET completed URLs
  KEYS[10] info     HASH delay, blocked, limit, last, dom
  KEYS[11] dcfg     HASH domain -> 'hits,window,scale' (the Kafka API's domain overrides)
  KEYS[12] black    SET blacklisted domains
  ARGV[1]  crawl ID, ARGV[2] queue key (every script that includes this)
]]
local K = {
  crawls = KEYS[1],
  state = KEYS[2],
  queues = KEYS[3],
  rot = KEYS[4],
  created = KEYS[5],
  sched = KEYS[6],
  held = KEYS[7],
  hdate = KEYS[8],
  done = KEYS[9],
  info = KEYS[10],
  dcfg = KEYS[11],
  black = KEYS[12],
}
local CRAWL = ARGV[1]
local QKEY = ARGV[2]

-- A `created` field value: the creation date, and a tab and the metadata JSON when there is metadata.
local function created_value(date, meta)
  if meta == '' then return tostring(date) end
  return date .. '\t' .. meta
end

-- Splits a `created` field value '<creation date>\t<metadata JSON>' into (creation date, metadata JSON).
local function split_created(v)
  local tab = string.find(v, '\t', 1, true)
  if not tab then return tonumber(v), '{}' end
  return tonumber(string.sub(v, 1, tab - 1)), string.sub(v, tab + 1)
end

-- Puts held URLs whose hold ended (held until <= now ms) back into the schedule at their date.
-- In chunks of 500, one variadic call per structure (unpack's stack is bounded).
local function release_expired(now)
  local expired = redis.call('ZRANGEBYSCORE', K.held, '-inf', now)
  for from = 1, #expired, 500 do
    local urls = {}
    for j = from, math.min(#expired, from + 499) do urls[#urls + 1] = expired[j] end
    local dates = redis.call('HMGET', K.hdate, unpack(urls))
    redis.call('ZREM', K.held, unpack(urls))
    redis.call('HDEL', K.hdate, unpack(urls))
    local sched = {}
    for j = 1, #urls do
      if dates[j] then
        sched[#sched + 1] = dates[j]
        sched[#sched + 1] = urls[j]
      end
    end
    if #sched > 0 then redis.call('ZADD', K.sched, unpack(sched)) end
  end
end

-- Registers the queue (and its crawl) if new, with its domain; new queues join the back of the rotation.
local function ensure_queue(domain)
  if redis.call('ZADD', K.queues, 'NX', 0, QKEY) == 1 then
    redis.call('ZADD', K.rot, redis.call('HINCRBY', K.state, 'seq', 1), QKEY)
    redis.call('SADD', K.crawls, CRAWL)
    if domain and domain ~= '' and domain ~= QKEY then redis.call('HSET', K.info, 'dom', domain) end
  end
end

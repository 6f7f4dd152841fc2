--[[
  URL frontier (lib/url-frontier): the keys of one call's queues and the helpers its scripts share. A call names
  the crawl-wide keys once and then six keys per queue (lib/redis/keys.ts urlFrontierScriptKeys); a script that
  works on several queues points K at each in turn with use_queue(i, key).

  KEYS[1]  crawls   SET of crawl IDs
  KEYS[2]  state    HASH active, delay
  KEYS[3]  queues   ZSET the crawl's queue keys (score 0)
  KEYS[4]  due      ZSET queue key -> epoch ms from which the queue may produce (GetURLs claims the due ones;
                    a queue with nothing scheduled or held is not in it, so an exhausted queue costs GetURLs nothing)
  KEYS[5]  dcfg     HASH domain -> 'hits,window,scale' (the Kafka API's domain overrides)
  KEYS[6]  black    SET blacklisted domains
  then per queue i (i = 1, 2, ...), at KEYS[6 * i + 1 .. 6 * i + 6]:
           created  HASH url -> '<creation date (s)>[\t<metadata JSON>]'
           (every url here is a member: lib/redis/uf-model.ts urlMember, the queue's host prefix cut off)
           sched    ZSET url -> next-fetch date (s), not held
           held     ZSET url -> held until (ms)
           hdate    HASH url -> next-fetch date of a held URL
           done     SET completed URLs
           info     HASH delay, blocked, limit, last, dom, meta
  ARGV[1]  crawl ID (every script that includes this)
]]
local K = {
  crawls = KEYS[1],
  state = KEYS[2],
  queues = KEYS[3],
  due = KEYS[4],
  dcfg = KEYS[5],
  black = KEYS[6],
  -- created, sched, held, hdate, done, info: set by use_queue, which every script calls before using them
}
local CRAWL = ARGV[1]
-- The queue key of the queue K points at.
local QKEY = nil

-- Points K's per-queue keys, and QKEY, at the call's i-th queue (1-based), whose key is `key`.
local function use_queue(i, key)
  local b = 6 * i
  K.created = KEYS[b + 1]
  K.sched = KEYS[b + 2]
  K.held = KEYS[b + 3]
  K.hdate = KEYS[b + 4]
  K.done = KEYS[b + 5]
  K.info = KEYS[b + 6]
  QKEY = key
end

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

-- Puts held URLs whose hold ended (held until <= now ms) back into the schedule at their date, at most `limit`
-- (the earliest ended; the rest on a later call), so one call stays short however many holds ended at once.
-- In chunks of 500, one variadic call per structure (unpack's stack is bounded).
local function release_expired(now, limit)
  local expired = redis.call('ZRANGEBYSCORE', K.held, '-inf', now, 'LIMIT', 0, limit)
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

-- Registers the queue (and its crawl) if new, with its domain. (It joins `due` once it has a URL scheduled.)
local function ensure_queue(domain)
  if redis.call('ZADD', K.queues, 'NX', 0, QKEY) == 1 then
    redis.call('SADD', K.crawls, CRAWL)
    if domain and domain ~= '' and domain ~= QKEY then redis.call('HSET', K.info, 'dom', domain) end
  end
end

-- Makes the queue K points at due no later than its earliest scheduled URL (ZADD LT: a later time already there is
-- brought forward, an earlier one kept), or takes it out of `due` when it has nothing scheduled or held. Called
-- wherever a URL may have become due or gone, or a bound on the queue may have gone (a hold released, fewer completed
-- URLs); a queue that still may not produce is put back by uf-serve, one look later.
local function wake_queue()
  local first = redis.call('ZRANGE', K.sched, 0, 0, 'WITHSCORES')
  if first[2] then
    redis.call('ZADD', K.due, 'LT', tonumber(first[2]) * 1000, QKEY)
  elseif redis.call('EXISTS', K.held) == 0 then
    redis.call('ZREM', K.due, QKEY)
  end
end

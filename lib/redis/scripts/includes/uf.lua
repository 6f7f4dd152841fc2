--[[
  URL frontier (lib/url-frontier): the keys of one call's crawls and queues and the helpers its scripts share. A call
  names the frontier-wide keys once, then per crawl a group: the crawl's two keys and six keys per queue
  (lib/redis/keys.ts urlFrontierScriptKeys, urlFrontierCrawlGroup); a script points K at a crawl with
  use_crawl(at, crawl) and at each queue in turn with use_queue_at(at, key), or, over one crawl at KEYS[7..],
  use_queue(i, key).

  KEYS[1]  crawls   SET of crawl IDs
  KEYS[2]  state    HASH active, delay, backlog (URLs scheduled or held in counted queues), indexed, icursor, fence
  KEYS[3]  dcfg     HASH domain -> 'hits,window,scale' (the Kafka API's domain overrides)
  KEYS[4]  black    SET blacklisted domains
  KEYS[5]  qdue     ZSET queue member ('<byte length of crawl ID>:<crawl ID><queue key>') -> epoch ms from which
                    the queue may produce: a crawl's `due` over every crawl (GetURLs over every crawl claims from it)
  KEYS[6]  holds    ZSET -> epoch ms: when the holds end, so that GetURLs releases those that ended (uf-release.lua)
                    without a key per queue: `b:<t>` -> t for the bucket of the holds a serve made that end at t (a
                    LIST of hold members, keys.ts urlFrontierHoldBucket), and a hold member (hold_prefix() .. url)
                    -> its end for a hold moved from legacy keys or by a reshard. The queue's info holds each of its
                    holds too (HOLD_FIELD) and says whether a URL is held: an entry whose field is gone (a queue
                    deleted, a URL completed) or ends later (held again) is dropped when read.
  KEYS[c..]         a crawl's group, from c (7 for a call over one crawl):
           queues   ZSET the crawl's queue keys (score 0)
           due      ZSET queue key -> epoch ms from which the queue may produce (GetURLs claims the due ones;
                    a queue with nothing scheduled or held is not in it, so an exhausted queue costs GetURLs nothing)
           then per queue i (i = 1, 2, ...), at KEYS[c + 6i - 4 .. c + 6i + 1]:
           created  HASH url -> '<creation date (s)>[\t<metadata JSON>]'
           (every url here is a member: lib/redis/url-frontier/model.ts urlMember, the queue's host prefix cut off)
           sched    ZSET url -> next-fetch date (s), not held
           held     ZSET url -> held until (ms): holds made before `holds` (legacy: uf-serve moves them)
           hdate    HASH url -> next-fetch date of a URL in `held` (legacy)
           done     SET completed URLs
           info     HASH delay, blocked, limit, last, dom, meta, counted, `held` (how many of its URLs are held),
                    `v` (HOLDS_V once no hold of the queue is in `held`/`hdate`), and per held URL
                    HOLD_FIELD .. url -> '<next-fetch date (s)>,<held until (ms)>'
]]
local K = {
  crawls = KEYS[1],
  state = KEYS[2],
  dcfg = KEYS[3],
  black = KEYS[4],
  qdue = KEYS[5],
  holds = KEYS[6],
  -- queues, due: set by use_crawl; created, sched, held, hdate, done, info: set by use_queue_at
}
-- The crawl ID and queue key K points at, the queue's member in `qdue`, and the start of its members in `holds`.
local CRAWL = nil
local QKEY = nil
local QMEMBER = nil
local HPREFIX = nil
-- K's crawl group starts at KEYS[CBASE].
local CBASE = 7

-- The info field of a held URL (its date and hold's end); no other info field has a ':'.
local HOLD_FIELD = 'h:'
-- info `v` of a queue whose holds are all in `holds` and its info (every queue created since; an older queue once
-- uf-serve moved its legacy holds).
local HOLDS_V = '2'

-- The queue's members in `holds`: the crawl ID and the queue key, each after its byte length, so both split apart.
local function hold_prefix(crawl, key)
  return #crawl .. ':' .. crawl .. #key .. ':' .. key
end

-- Points K's crawl keys, and CRAWL, at the crawl whose group starts at KEYS[at].
local function use_crawl(at, crawl)
  CBASE = at
  K.queues = KEYS[at]
  K.due = KEYS[at + 1]
  CRAWL = crawl
end

-- Points K's per-queue keys, and QKEY, at the queue whose six keys start at KEYS[at], whose key is `key`.
local function use_queue_at(at, key)
  K.created = KEYS[at]
  K.sched = KEYS[at + 1]
  K.held = KEYS[at + 2]
  K.hdate = KEYS[at + 3]
  K.done = KEYS[at + 4]
  K.info = KEYS[at + 5]
  QKEY = key
  QMEMBER = #CRAWL .. ':' .. CRAWL .. key
  HPREFIX = hold_prefix(CRAWL, key)
end

-- Points K's per-queue keys at the i-th queue (1-based) of K's crawl group.
local function use_queue(i, key)
  use_queue_at(CBASE + 6 * i - 4, key)
end

-- The state's `fence` (a message), or false: `frontier reshard` (lib/redis/url-frontier/reshard.ts) puts one in every
-- partition of both counts while it moves the frontier to another count, and leaves one in the old count's once it
-- has. A script that writes answers `FENCE_ERROR .. ' ' .. fence()` instead of writing then (the server answers
-- UNAVAILABLE with the message: lib/redis/url-frontier/model.ts FENCE_ERROR), so a server still running during or
-- after a move cannot change what is being moved or write where nobody reads.
local FENCE_ERROR = 'UFMOVE'
local function fence()
  return redis.call('HGET', K.state, 'fence')
end

-- Whether the queue K points at is in the frontier's `backlog` total (info `counted`).
local function counted()
  return redis.call('HGET', K.info, 'counted') == '1'
end

-- Adds `n` (may be negative) to the frontier's `backlog` total, for a counted queue.
local function count_backlog(n)
  if n ~= 0 then redis.call('HINCRBY', K.state, 'backlog', n) end
end

-- How many URLs of the queue K points at are held: its info's count and its legacy `held` (K.held named).
local function held_count()
  local n = tonumber(redis.call('HGET', K.info, 'held') or '0')
  if K.held then n = n + redis.call('ZCARD', K.held) end
  return n
end

-- Ends the hold of `url` in the queue K points at, if it is held (its info field, its `holds` entry, the count, and
-- the legacy keys when named): returns 1 if it was held, else 0.
local function drop_hold(url)
  local was = 0
  if redis.call('HDEL', K.info, HOLD_FIELD .. url) == 1 then
    redis.call('HINCRBY', K.info, 'held', -1)
    redis.call('ZREM', K.holds, HPREFIX .. url)
    was = 1
  end
  if K.held and redis.call('ZREM', K.held, url) == 1 then
    redis.call('HDEL', K.hdate, url)
    was = 1
  end
  return was
end

-- An integer as Redis takes it: string.format's integer path, not the float formatting Lua gives a number passed to
-- redis.call (%.14g, several times slower, and every serve passes a few).
local function int(x)
  return string.format('%d', x)
end

-- Places the queue K points at in its crawl's `due` and in `qdue` at `t` (epoch ms), or takes it out of both (nil).
local function place_queue(t)
  if t then
    t = int(t)
    redis.call('ZADD', K.due, t, QKEY)
    redis.call('ZADD', K.qdue, t, QMEMBER)
  else
    redis.call('ZREM', K.due, QKEY)
    redis.call('ZREM', K.qdue, QMEMBER)
  end
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
-- In chunks of 500, one variadic call per structure (unpack's stack is bounded). Returns how many left the backlog
-- (a held URL without its date, which no script leaves: 0 unless a key was edited by hand).
local function release_expired(now, limit)
  local lost = 0
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
    lost = lost + #urls - #sched / 2
  end
  return lost
end

-- The state's `indexed` once every due queue is in `qdue` and every queue counted (url-frontier/index-walk.ts).
local INDEXED = '2'

-- Registers the queue (and its crawl) if new, with its domain, counted in the backlog total from the start. (It
-- joins `due` once it has a URL scheduled.) The first crawl of a frontier marks it indexed: nothing older is left to
-- index (uf-index.lua).
local function ensure_queue(domain)
  if redis.call('ZADD', K.queues, 'NX', 0, QKEY) == 1 then
    if redis.call('SADD', K.crawls, CRAWL) == 1 and redis.call('SCARD', K.crawls) == 1 then
      redis.call('HSET', K.state, 'indexed', INDEXED)
    end
    redis.call('HSET', K.info, 'counted', 1, 'v', HOLDS_V)
    if domain and domain ~= '' and domain ~= QKEY then redis.call('HSET', K.info, 'dom', domain) end
  end
end

-- Makes the queue K points at due no later than its earliest scheduled URL (ZADD LT: a later time already there is
-- brought forward, an earlier one kept), or takes it out of `due` when it has nothing scheduled (its holds, when they
-- end, are released by uf-release.lua, which wakes it again; a queue with legacy holds keeps its place, which is their
-- end). Called wherever a URL may have become due or gone, or a bound on the queue may have gone (a hold released,
-- fewer completed URLs); a queue that still may not produce is put back by uf-serve, one look later.
local function wake_queue()
  local first = redis.call('ZRANGE', K.sched, 0, 0, 'WITHSCORES')
  if first[2] then
    local t = int(tonumber(first[2]) * 1000)
    redis.call('ZADD', K.due, 'LT', t, QKEY)
    redis.call('ZADD', K.qdue, 'LT', t, QMEMBER)
  elseif not K.held or redis.call('EXISTS', K.held) == 0 then
    place_queue(nil)
  end
end

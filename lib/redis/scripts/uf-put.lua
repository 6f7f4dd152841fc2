--[[
  URL frontier: store URL items into queues (PutURLs, PutDiscovered), several queues of several crawls per call. A
  discovered URL is added only if its queue does not know it (active or completed); a known URL always overwrites
  metadata and schedule, releases its hold, and with date 0 becomes completed. The creation date is set on first
  store only; `created` holds '<creation date>\t<metadata JSON>' per URL (just the date when there is no
  metadata), and the queue's info gets `meta` = 1 once any URL comes with metadata. URLs are members
  (lib/redis/url-frontier/model.ts urlMember: the queue's host prefix cut off).

  KEYS[1..6]   the frontier-wide keys, then per crawl its group: its two keys and its queues' six keys each, in
               ARGV order (includes/uf.lua; keys.ts urlFrontierCrawlGroup)
  ARGV[1]      now (epoch s)
  ARGV[2..]    per crawl, in KEYS order: crawl ID, queue count, then per queue i: queue key, the key's registrable
               domain (stored with a new queue, for domain overrides), item count n, then n quadruples: kind ('d'
               discovered, 'k' known), URL, next-fetch date (s; known only, 0 = completed), metadata JSON

  Returns one status per item, in ARGV order: 0 stored (OK), 1 already known (SKIPPED). Items of one queue are
  applied in order, so a duplicate inside a call is SKIPPED.
  A queue that got a URL is due (in `due`) no later than its earliest scheduled URL; one left with nothing scheduled
  or held leaves `due`; its place in `qdue` is the same. The frontier's `backlog` total follows the URLs that
  become or stop being scheduled or held, in counted queues.
  Answers the error `UFMOVE <message>` and writes nothing while the frontier is fenced (includes/uf.lua fence()).
  Cost: O(log n) per item and O(log q) per queue, one call for every queue of a batch.
]]
--- @include "uf"

local fenced = fence()
if fenced then return redis.error_reply(FENCE_ERROR .. ' ' .. fenced) end

local now = ARGV[1]
local out = {}
local i = 2
local k = 7 -- the current crawl's group in KEYS
local q = 0 -- the current queue within its crawl
local queues = 0 -- the current crawl's queue count
while i <= #ARGV do
  if q == queues then
    if q > 0 then k = k + 2 + 6 * q end
    use_crawl(k, ARGV[i])
    queues, q = tonumber(ARGV[i + 1]), 0
    i = i + 2
  end
  q = q + 1
  use_queue(q, ARGV[i])
  local domain = ARGV[i + 1]
  local stop = i + 3 + 4 * tonumber(ARGV[i + 2]) -- just past the queue's items
  local ensured = false
  local flagged = false -- info `meta` set in this call
  local in_total = false -- the queue is counted in the backlog total
  local delta = 0 -- URLs that became scheduled or held, less those that stopped being either
  local function ensure()
    if not ensured then
      ensure_queue(domain)
      in_total = counted()
      ensured = true
    end
  end
  i = i + 3
  while i < stop do
    local kind, url, date, meta = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
    if meta ~= '' and not flagged then
      -- the queue holds metadata from now on: uf-serve reads `created` only for such queues
      redis.call('HSET', K.info, 'meta', 1)
      flagged = true
    end
    local old = redis.call('HGET', K.created, url)
    if kind == 'd' then
      if old then
        out[#out + 1] = 1
      else
        ensure()
        redis.call('HSET', K.created, url, created_value(now, meta))
        redis.call('ZADD', K.sched, now, url)
        delta = delta + 1
        out[#out + 1] = 0
      end
    else
      ensure()
      local created = now
      if old then created = split_created(old) end
      redis.call('HSET', K.created, url, created_value(created, meta))
      local was_held = drop_hold(url)
      if date == '0' then
        delta = delta - was_held - redis.call('ZREM', K.sched, url)
        redis.call('SADD', K.done, url)
      else
        redis.call('SREM', K.done, url)
        -- ZADD counts 1 for a URL that was not scheduled: it joins the backlog unless it was held
        delta = delta + redis.call('ZADD', K.sched, date, url) - was_held
      end
      out[#out + 1] = 0
    end
    i = i + 4
  end
  -- a URL scheduled or a hold released: the queue is due by its earliest URL; all completed: out of `due` (O(log q))
  if ensured then
    wake_queue()
    if in_total then count_backlog(delta) end
  end
end
return out

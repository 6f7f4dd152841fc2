--[[
  URL frontier (lib/url-frontier): the keys of one queue and the helpers its scripts share.

  KEYS[1]  crawls   SET of crawl IDs
  KEYS[2]  state    HASH active, delay, seq
  KEYS[3]  queues   ZSET the crawl's queue keys (score 0)
  KEYS[4]  rot      ZSET queue key -> rotation sequence
  KEYS[5]  created  HASH url -> creation date (s)
  KEYS[6]  meta     HASH url -> metadata JSON
  KEYS[7]  sched    ZSET url -> next-fetch date (s), not held
  KEYS[8]  held     ZSET url -> held until (ms)
  KEYS[9]  hdate    HASH url -> next-fetch date of a held URL
  KEYS[10] done     SET completed URLs
  KEYS[11] info     HASH delay, blocked, limit, last
  ARGV[1]  crawl ID, ARGV[2] queue key (every script that includes this)
]]
local K = {
  crawls = KEYS[1],
  state = KEYS[2],
  queues = KEYS[3],
  rot = KEYS[4],
  created = KEYS[5],
  meta = KEYS[6],
  sched = KEYS[7],
  held = KEYS[8],
  hdate = KEYS[9],
  done = KEYS[10],
  info = KEYS[11],
}
local CRAWL = ARGV[1]
local QKEY = ARGV[2]

-- Puts held URLs whose hold ended (held until <= now ms) back into the schedule at their date.
local function release_expired(now)
  local expired = redis.call('ZRANGEBYSCORE', K.held, '-inf', now)
  for _, url in ipairs(expired) do
    local date = redis.call('HGET', K.hdate, url)
    redis.call('ZREM', K.held, url)
    redis.call('HDEL', K.hdate, url)
    if date then redis.call('ZADD', K.sched, date, url) end
  end
end

-- Registers the queue (and its crawl) if new; new queues join the back of the rotation.
local function ensure_queue()
  if redis.call('ZADD', K.queues, 'NX', 0, QKEY) == 1 then
    redis.call('ZADD', K.rot, redis.call('HINCRBY', K.state, 'seq', 1), QKEY)
    redis.call('SADD', K.crawls, CRAWL)
  end
end

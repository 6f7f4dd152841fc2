--[[
  The enqueue step, shared by enqueue.lua and ack-enqueue.lua (included after "frontier" and "dupefilter";
  enqueue.lua's header says what it does per request and what it returns).

  enqueue_requests(a0) reads its arguments from ARGV[a0] on:
    ARGV[a0]          dupefilter TTL (s), refreshed on every enqueue
    ARGV[a0 + 1]      spider type
    ARGV[a0 + 2]      number of crawls C; then C groups of 6:
                        crawl key, appid, settings JSON ('' = must already exist), expires (epoch s, 0 = never),
                        domain_max_pages (0 = no cap), claimed dupefilter token ('' = none; see check_claims)
    then              number of requests R; then R groups of 7:
                        crawl index (1..C), fingerprint (8 bytes), domain, priority, depth, retries,
                        member tail (lib/redis/member.ts: the URL relative to its scheme and domain)
  and the dupefilter HASH of the i-th crawl from KEYS[19 + i]. Returns the list of R codes, and a list of C entries:
  the crawl's dupefilter token (a string; '' when it has no dupefilter) or, for a refused crawl, its code.

  Dupefilter tokens (lib/redis/dupe-cache.ts): field 'g' of a dupefilter HASH names its generation, a sequence
  number of the partition (never reused) given when the HASH is first used. A crawler that knows fingerprints are
  in the HASH with that token may leave those children out and claim the token instead; check_claims(a0), called
  before anything is written, finds the claims that no longer hold (the HASH was deleted by a stop, expired, or
  replaced). enqueue_requests then trusts only the claims check_claims verified: a crawl with a verified claim has
  its dupefilter's TTL refreshed as if its left-out children had been sent.
]]

-- Claims check_claims verified: crawl index -> token.
local CLAIMED = {}

-- The crawl groups (1..C) whose claimed token is not their dupefilter's; verified ones go to CLAIMED. A claim on a
-- crawl sent with settings (a seed may start the crawl afresh, dropping its old dupefilter) never holds.
local function check_claims(a0)
  local stale = {}
  local a = a0 + 3
  for i = 1, tonumber(ARGV[a0 + 2]) do
    local claim = ARGV[a + 5]
    if claim ~= '' then
      if ARGV[a + 2] == '' and redis.call('HGET', KEYS[19 + i], 'g') == claim then
        CLAIMED[i] = claim
      else
        stale[#stale + 1] = i
      end
    end
    a = a + 6
  end
  return stale
end

-- A free ref: the next number, wrapping at REF_LIMIT and skipping refs still held (a record, or counters
-- a stopped crawl left for the sweep).
local function alloc_ref()
  for _ = 1, 1000 do
    local n = redis.call('HINCRBY', K.refs, '#', 1)
    if n >= REF_LIMIT then
      n = 1
      redis.call('HSET', K.refs, '#', n)
    end
    local ref = venc(n)
    if redis.call('HEXISTS', K.settings, ref) == 0 and not redis.call('ZSCORE', K.finished, ref) then return ref, n end
  end
  return error('ERR no free crawl ref')
end

local function register(c, first_seq, spider)
  c.ref, c.refnum = alloc_ref()
  redis.call('HSET', K.refs, c.key, c.ref)
  redis.call('HSET', K.settings, c.ref, c.key .. seq_enc(first_seq) .. spider .. '\0' .. c.settings)
  if c.expires > 0 then redis.call('ZADD', K.expiry, c.expires, c.ref) end
  redis.call('ZADD', K.apps, 0, spider .. '\0' .. c.appid .. '\0' .. c.ref)
  if c.cap > 0 then redis.call('HSET', K.counts, c.ref .. '\0maxp', c.cap) end
end

-- The token of a crawl's dupefilter (see the header), given now if it has none yet; '' when there is no HASH.
local function dupe_token(c)
  if c.token then return c.token end
  local t = redis.call('HGET', c.dupe, 'g')
  if not t then
    if redis.call('EXISTS', c.dupe) == 0 then return '' end
    -- A sequence number spent on the token: unique in the partition, so no later HASH gets the same one.
    t = seq_enc(redis.call('INCR', K.seq))
    redis.call('HSET', c.dupe, 'g', t)
  end
  return t
end

-- Enqueues the batch whose arguments start at ARGV[a0] (see the header); returns its codes.
local function enqueue_requests(a0)
  local ttl = tonumber(ARGV[a0])
  local spider = ARGV[a0 + 1]
  local ncrawls = tonumber(ARGV[a0 + 2])
  local crawls = {}
  local a = a0 + 3
  for i = 1, ncrawls do
    local c = {
      key = ARGV[a], appid = ARGV[a + 1], settings = ARGV[a + 2], expires = tonumber(ARGV[a + 3]),
      cap = tonumber(ARGV[a + 4]), dupe = KEYS[19 + i], token = CLAIMED[i],
    }
    a = a + 6
    local stop_until = redis.call('ZSCORE', K.stopped, c.key)
    if stop_until and tonumber(stop_until) > NOW then
      c.status = -1
    else
      c.ref = redis.call('HGET', K.refs, c.key)
      if c.ref then
        c.refnum = vnum(c.ref)
        local exp = redis.call('ZSCORE', K.expiry, c.ref)
        if exp and tonumber(exp) * 1000 <= NOW then c.status = -2 end
        c.cap = tonumber(redis.call('HGET', K.counts, c.ref .. '\0maxp') or 0)
      elseif c.settings == '' then
        c.status = -4
      elseif c.expires > 0 and c.expires * 1000 <= NOW then
        c.status = -2
      else
        -- A crawl without a record has no live dupefilter (stop unlinks it, a swept crawl's has expired):
        -- whatever is left under its name is stale, and the seed starts the crawl afresh.
        redis.call('UNLINK', c.dupe)
      end
    end
    crawls[i] = c
  end

  local nreq = tonumber(ARGV[a])
  a = a + 1
  -- Sequence numbers for the whole batch in one call (those of refused requests are simply not used).
  local seq0 = redis.call('INCRBY', K.seq, nreq) - nreq
  local codes = {}
  -- Counter increments, summed over the batch and written once per counter at the end.
  local queued = {}   -- K.cidx field -> {ref number, count}
  local caps = {}     -- page-cap field -> {ref number, count now, added}
  local per_crawl = {} -- ref -> count
  local per_domain = {} -- domain -> count
  local best = {}     -- domain -> ready score of its best new request
  for i = 1, nreq do
    local c = crawls[tonumber(ARGV[a])]
    local fp, domain, prio = ARGV[a + 1], ARGV[a + 2], clamp_prio(tonumber(ARGV[a + 3]))
    local depth, retries, tail = tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5]), ARGV[a + 6]
    a = a + 7
    if c.status then
      codes[i] = c.status
    else
      if #fp ~= 8 then return error('ERR fingerprints are 8 bytes') end
      local seen, bucket, rest, v = dupe_find(c, fp)
      local cap = nil
      if not seen and c.cap and c.cap > 0 and c.ref then
        local f = c.ref .. '\0' .. domain
        cap = caps[f]
        if not cap then
          cap = {c.refnum, cidx_get(c.refnum, f), 0}
          caps[f] = cap
        end
      end
      if seen then
        codes[i] = 0
      elseif cap and cap[2] >= c.cap then
        codes[i] = -3
      else
        dupe_add(c, bucket, rest, v)
        local seq = seq0 + i
        if not c.ref then
          register(c, seq, spider)
          if c.cap and c.cap > 0 then
            cap = {c.refnum, 0, 0}
            caps[c.ref .. '\0' .. domain] = cap
          end
        end
        if cap then
          cap[2] = cap[2] + 1
          cap[3] = cap[3] + 1
        end
        if not c.active then
          -- New work: a completed crawl is no longer finished.
          redis.call('ZREM', K.finished, c.ref)
          c.active = true
        end
        local m, pe = build_member(domain, prio, seq, c.ref, depth, retries, tail)
        redis.call('ZADD', K.queue, 0, m)
        local f = queued_field(c.ref, domain, pe)
        local q = queued[f]
        if q then q[2] = q[2] + 1 else queued[f] = {c.refnum, 1} end
        per_crawl[c.ref] = (per_crawl[c.ref] or 0) + 1
        per_domain[domain] = (per_domain[domain] or 0) + 1
        local score = ready_score(prio, seq)
        if not best[domain] or score < best[domain] then best[domain] = score end
        codes[i] = 1
      end
      c.used = true
    end
  end

  for f, q in pairs(queued) do cidx_add(q[1], f, q[2]) end
  for f, cap in pairs(caps) do
    if cap[3] > 0 then cidx_add(cap[1], f, cap[3]) end
  end
  for ref, n in pairs(per_crawl) do redis.call('HINCRBY', K.counts, ref .. '\0q', n) end

  -- Per-domain work in chunks of at most 1000 domains per command (few calls, not one per domain).
  local domains, added, scores = {}, {}, {}
  for domain, n in pairs(per_domain) do
    domains[#domains + 1] = domain
    added[#added + 1] = n
    scores[#scores + 1] = best[domain]
  end
  total_kept()
  for i = 1, #domains, 1000 do
    local j = math.min(i + 999, #domains)
    -- Backlog per domain, and in total.
    local backlog = redis.call('HMGET', K.dcount, unpack(domains, i, j))
    local set, sum = {}, 0
    for k = i, j do
      set[#set + 1] = domains[k]
      set[#set + 1] = tonumber(backlog[k - i + 1] or 0) + added[k]
      sum = sum + added[k]
    end
    redis.call('HSET', K.dcount, unpack(set))
    add_total(sum)
    -- A domain is rescheduled only when it must be: a ready domain when a new request beats its head (its
    -- score), an idle (or blacklisted) domain always; a waiting domain stays until its throttle allows.
    local ready = redis.call('ZMSCORE', K.ready, unpack(domains, i, j))
    local better, other = {}, {}
    for k = i, j do
      local current = ready[k - i + 1]
      if current then
        if scores[k] < tonumber(current) then
          better[#better + 1] = scores[k]
          better[#better + 1] = domains[k]
        end
      else
        other[#other + 1] = domains[k]
      end
    end
    if #better > 0 then redis.call('ZADD', K.ready, unpack(better)) end
    if #other > 0 then
      local waiting = redis.call('ZMSCORE', K.waiting, unpack(other))
      for k, domain in ipairs(other) do
        if not waiting[k] then schedule(domain) end
      end
    end
  end
  local tokens = {}
  for i, c in ipairs(crawls) do
    if c.df and c.df.dirty then redis.call('HSET', c.dupe, '', c.df.n .. ':' .. c.df.buckets) end
    if c.status then
      tokens[i] = c.status
    elseif c.used or c.token then
      redis.call('EXPIRE', c.dupe, ttl)
      tokens[i] = dupe_token(c)
    else
      tokens[i] = ''
    end
  end
  return codes, tokens
end

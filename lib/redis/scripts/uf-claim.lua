--[[
  URL frontier: the queues that GetURLs (without a key) should look at now: those whose time in an index of due
  queues has come, the longest-due first, from `qdue` (every crawl) or from one crawl's `due`. Each is pushed
  `claim` ms into the future there at once, so concurrent GetURLs calls (from any server) take different queues;
  uf-serve.lua then gives each its real next time (or takes it out). Queues with nothing to serve are in neither, so
  an empty GetURLs costs O(log q), whatever the frontier holds. (A queue claimed in one index is still due in the
  other: a GetURLs of the other kind may serve it too, which uf-serve's checks make safe.)

  `qdue` is exact; a crawl's `due` may be earlier, never later: uf-serve places queues claimed from `qdue` there alone
  (one write per queue less). Over one crawl, each due queue's time is checked in `qdue` (KEYS[3], once the frontier
  is indexed): one due later there gets that time in `due` and is not claimed, one claimed from `qdue` (its time there
  ends in .5, which only a claim's does) is left as it is, for a later call, and one due there or out of it is
  claimed (uf-serve places it in both, or takes it out of both: a queue missing from `qdue` is served all the same).
  So each queue served over every crawl costs one such correction or look at most, when a GetURLs of its crawl comes
  to it.

  A crawl stored before `due` existed has a `rot` (the old round-robin rotation) and no `due`: its queues are made due
  now, once (O(q), on the first GetURLs naming the crawl after the upgrade), and `rot` goes. Over every crawl nothing
  is migrated: the walk of uf-index.lua put the due queues of every such crawl into `qdue` first.

  KEYS[1]     qdue (ZSET '<byte length of crawl ID>:<crawl ID><queue key>' -> epoch ms from which the queue may
              produce) or, over one crawl, its due (ZSET queue key -> the same)
  KEYS[2]     over one crawl only: its rot (ZSET, the pre-`due` rotation; legacy, absent once migrated)
  KEYS[3]     over one crawl only, and only once the frontier is indexed: qdue, to check `due` against
  ARGV[1]     now (epoch ms)
  ARGV[2]     count: the most queues to return
  ARGV[3]     claim (ms): how far the returned queues are pushed until uf-serve places them (so a server that dies
              between the two calls delays them by this much, no more)
  ARGV[4]     over one crawl: its crawl ID

  Returns, per queue claimed, longest-due first: over every crawl its crawl ID and queue key; over one crawl a first
  element, 1 when the call stopped after looking at 4 × count queues (more may be due: call again) else 0, then the
  claimed queues' keys.
  Cost: O(log q + count) over every crawl; O((count + corrected) × log q) over one crawl, corrected < 4 × count.
]]
local index = KEYS[1]
local now = tonumber(ARGV[1])
local count = tonumber(ARGV[2])
local until_ms = now + tonumber(ARGV[3])

if KEYS[2] == nil then
  local due = redis.call('ZRANGE', index, '-inf', now, 'BYSCORE', 'LIMIT', 0, count)
  if #due == 0 then return {} end
  -- .5: marks the time as a claim's for the checks over one crawl (every other time in the indexes is whole ms)
  local claim = string.format('%d.5', until_ms)
  local claims = {}
  for j = 1, #due do
    claims[2 * j - 1] = claim
    claims[2 * j] = due[j]
  end
  redis.call('ZADD', index, 'XX', unpack(claims))
  local out = {}
  for j = 1, #due do
    local member = due[j]
    local colon = string.find(member, ':', 1, true)
    local stop = colon + tonumber(string.sub(member, 1, colon - 1))
    out[2 * j - 1] = string.sub(member, colon + 1, stop)
    out[2 * j] = string.sub(member, stop + 1)
  end
  return out
end

if redis.call('EXISTS', KEYS[2]) == 1 then
  if redis.call('EXISTS', index) == 0 then redis.call('ZUNIONSTORE', index, 1, KEYS[2], 'WEIGHTS', 0) end
  redis.call('DEL', KEYS[2])
end
local qdue = KEYS[3]
local prefix = qdue and (#ARGV[4] .. ':' .. ARGV[4])
local out = { 0 }
-- due queues looked at, and those left in place (claimed over every crawl), which stay first in the range
local looked, skipped = 0, 0
while #out <= count do
  local due = redis.call('ZRANGE', index, '-inf', now, 'BYSCORE', 'LIMIT', skipped, count + 1 - #out)
  if #due == 0 then break end
  local claims, fixes = {}, {}
  local times = {}
  if qdue then
    local members = {}
    for j = 1, #due do members[j] = prefix .. due[j] end
    times = redis.call('ZMSCORE', qdue, unpack(members))
  end
  for j = 1, #due do
    local t = times[j]
    if not qdue or not t or tonumber(t) <= now then
      claims[#claims + 1] = until_ms
      claims[#claims + 1] = due[j]
      out[#out + 1] = due[j]
    elseif string.find(t, '.', 1, true) then
      skipped = skipped + 1
    else
      fixes[#fixes + 1] = t
      fixes[#fixes + 1] = due[j]
    end
  end
  if #claims > 0 then redis.call('ZADD', index, 'XX', unpack(claims)) end
  if #fixes > 0 then redis.call('ZADD', index, 'XX', unpack(fixes)) end
  looked = looked + #due
  if looked >= 4 * count and #out <= count then
    out[1] = 1
    break
  end
end
return out

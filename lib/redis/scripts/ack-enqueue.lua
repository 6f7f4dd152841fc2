--[[
  Ack leased requests together with their children (the requests their pages follow that belong in this
  partition), in one round trip: the children are queued first, exactly as enqueue.lua queues them, then each lease
  is acked in order, exactly as ack.lua acks it. Atomic, so a page's children are stored before (and with) its ack: a
  crawler that dies after this call loses nothing, and one that dies before it has acked nothing (its lease expires
  and the page is fetched again; the children's dupefilter makes that harmless). Queuing the children first also
  means an ack that queued work never reports the crawl complete. Several pages of one Kafka batch go in one call
  (their children in one batch, in page order): each as if acked alone after all the children were queued.

  KEYS[1..19]  partition keys (includes/frontier.lua)
  KEYS[19+i]   dupefilter HASH of the i-th crawl of the children
  ARGV[1..5]   common frontier arguments
  ARGV[6]      L, the number of leases
  ARGV[7..]    L pairs: member (the lease handle), outcome 'done' | 'fail'
  ARGV[7+2L]   dupefilter TTL (s): refreshed for the children's crawls; a crawl an ack completes is swept that long
               after (K.finished)
  ARGV[8+2L..] the children of all L pages, as enqueue.lua's ARGV[7..]: spider type, number of crawls and their
               groups of 6, number of requests and their groups of 7. A crawl's group may claim its dupefilter's
               token: the caller knows the children it left out are in that dupefilter (lib/redis/dupe-cache.ts).

  Returns L + 2 entries: ack.lua's reply {code, queued, leased, done, failed} for each lease in order, then
  enqueue.lua's list of codes, one per child sent (1 queued, 0 duplicate, -1 crawl stopped, -2 crawl expired,
  -3 domain page cap reached, -4 unknown crawl), then per crawl its dupefilter token or its code when refused
  (includes/enqueue.lua). Or, when a claim no longer holds, {'stale', crawl index...} and nothing was written:
  the caller sends again without those claims.
  Cost: enqueue.lua's for the children plus ack.lua's per lease.
]]
--- @include "frontier"
--- @include "dupefilter"
--- @include "enqueue"
--- @include "ack"

local n = tonumber(ARGV[6])
local at = 7 + 2 * n
local stale = check_claims(at)
if #stale > 0 then
  table.insert(stale, 1, 'stale')
  return stale
end
local codes, tokens = enqueue_requests(at)
local ttl = tonumber(ARGV[at])
local out = {}
for i = 7, at - 1, 2 do out[#out + 1] = ack_lease(ARGV[i], ARGV[i + 1], ttl) end
out[#out + 1] = codes
out[#out + 1] = tokens
return out

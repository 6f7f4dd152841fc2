--[[
  Ack a leased request together with its children (the requests its page follows that belong in this partition),
  in one round trip: the children are queued first, exactly as enqueue.lua queues them, then the lease is acked,
  exactly as ack.lua acks it. Atomic, so a page's children are stored before (and with) its ack: a crawler that
  dies after this call loses nothing, and one that dies before it has acked nothing (its lease expires and the
  page is fetched again; the children's dupefilter makes that harmless). Queuing the children first also means an
  ack that queued work never reports the crawl complete.

  KEYS[1..18]  partition keys (includes/frontier.lua)
  KEYS[18+i]   dupefilter HASH of the i-th crawl of the children
  ARGV[1..5]   common frontier arguments
  ARGV[6]      member (the lease handle)
  ARGV[7]      outcome: 'done' | 'fail'
  ARGV[8]      dupefilter TTL (s): refreshed for the children's crawls; a crawl this ack completes is swept that
               long after (K.finished)
  ARGV[9..]    the children, as enqueue.lua's ARGV[7..]: spider type, number of crawls and their groups of 5,
               number of requests and their groups of 7

  Returns {code, queued, leased, done, failed, codes}: ack.lua's reply, then enqueue.lua's list of codes, one per
  child (1 queued, 0 duplicate, -1 crawl stopped, -2 crawl expired, -3 domain page cap reached, -4 unknown crawl).
  Cost: enqueue.lua's for the children plus ack.lua's.
]]
--- @include "frontier"
--- @include "enqueue"
--- @include "ack"

local codes = enqueue_requests(8)
local r = ack_lease(ARGV[6], ARGV[7], tonumber(ARGV[8]))
r[6] = codes
return r

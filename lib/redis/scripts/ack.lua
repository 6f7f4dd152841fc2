--[[
  Ack leased requests: each one's page was published (outcome 'done') or it failed for good ('fail').
  A late ack (the lease had expired and the request was reclaimed but not yet leased again) removes the
  queued copy, so a slow crawler does not cause a second fetch. Reclaim counts a retry, which changes the
  member, so the late ack looks for it with up to RECLAIM_LOOKAHEAD more retries (includes/frontier.lua).
  Several leases in one call (a crawler acks the pages of one Kafka batch together) are acked in order, each
  exactly as if alone.

  KEYS[1..19]  partition keys (includes/frontier.lua)
  ARGV[1..5]   common frontier arguments
  ARGV[6]      dupefilter TTL (s): a crawl an ack completes is swept that long after (K.finished)
  ARGV[7..]    pairs: member (the lease handle), outcome 'done' | 'fail'

  Returns one {code, queued, leased, done, failed} per pair, in order:
    code 1 acked, 2 acked and the crawl is now complete (nothing queued, nothing leased), 0 the crawl was
    stopped or expired meanwhile, -1 unknown lease (already acked). Of the two holders of a request reclaimed
    and leased again, the first to ack counts and the other gets -1.
  Cost: O(log n) per lease.
]]
--- @include "frontier"
--- @include "ack"

local ttl = tonumber(ARGV[6])
local out = {}
for i = 7, #ARGV - 1, 2 do out[#out + 1] = ack_lease(ARGV[i], ARGV[i + 1], ttl) end
return out

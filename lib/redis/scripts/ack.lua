--[[
  Ack a leased request: its page was published (outcome 'done') or it failed for good ('fail').
  A late ack (the lease had expired and the request was reclaimed but not yet leased again) removes the
  queued copy, so a slow crawler does not cause a second fetch. Reclaim counts a retry, which changes the
  member, so the late ack looks for it with up to RECLAIM_LOOKAHEAD more retries (includes/frontier.lua).

  KEYS[1..18]  partition keys (includes/frontier.lua)
  ARGV[1..5]   common frontier arguments
  ARGV[6]      member (the lease handle)
  ARGV[7]      outcome: 'done' | 'fail'
  ARGV[8]      dupefilter TTL (s): a crawl this ack completes is swept that long after (K.finished)

  Returns {code, queued, leased, done, failed}
    code 1 acked, 2 acked and the crawl is now complete (nothing queued, nothing leased), 0 the crawl was
    stopped or expired meanwhile, -1 unknown lease (already acked). Of the two holders of a request reclaimed
    and leased again, the first to ack counts and the other gets -1.
  Cost: O(log n).
]]
--- @include "frontier"
--- @include "ack"

return ack_lease(ARGV[6], ARGV[7], tonumber(ARGV[8]))

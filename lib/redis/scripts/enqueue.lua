--[[
  Enqueue a batch of requests into one frontier partition, in one round trip. Per request, in order:
  stopped crawl → refused; crawl unknown (a child whose crawl ended) → refused; crawl expired → refused;
  already seen in this crawl (dupefilter) → duplicate; domain page cap reached → refused; else queued.
  (Duplicate before cap, so a redelivered batch answers duplicate for what it queued the first time.)
  Seeds register their crawl on first sight (settings stored once per crawl). A request queued for a
  completed crawl takes it out of K.finished (see sweep-finished.lua). Enqueueing the same batch twice
  changes nothing the second time. A blacklisted domain's requests are queued but not scheduled.

  The dupefilter of a crawl is an exact set of 8-byte fingerprints stored compactly, a linear hash table in
  one HASH: field '' = `<fingerprints>:<buckets>`; field 'g' = its token (includes/enqueue.lua); field = a
  bucket number (2 bytes, little-endian), value = bytes 2..8 of each fingerprint in the bucket, concatenated
  (byte 1 is implied: see dupe_bucket in includes/dupefilter.lua). Buckets
  split one at a time as the set grows (256 to 65536 buckets, about DUPE_LOAD fingerprints each), so a
  fingerprint costs about 7 bytes plus a share of a hash entry whatever the crawl's size, and each check
  or insert reads one bucket of a few hundred bytes.

  KEYS[1..19]       partition keys (includes/frontier.lua)
  KEYS[19+i]        dupefilter HASH of the i-th crawl of ARGV
  ARGV[1..5]        common frontier arguments
  ARGV[6..]         the batch, read at computed offsets by includes/enqueue.lua (enqueue_requests(a0), a0 = 6):
  ARGV[6]           dupefilter TTL (s), refreshed on every enqueue
  ARGV[7]           spider type
  ARGV[8]           number of crawls C; then C groups of 6:
                      crawl key, appid, settings JSON ('' = must already exist), expires (epoch s, 0 = never),
                      domain_max_pages (0 = no cap), claimed dupefilter token (ignored here: always sent '')
  then              number of requests R; then R groups of 7:
                      crawl index (1..C), fingerprint (8 bytes), domain, priority, depth, retries,
                      member tail (lib/redis/member.ts: the URL relative to its scheme and domain)

  Returns a list of R codes: 1 queued, 0 duplicate, -1 crawl stopped, -2 crawl expired,
  -3 domain page cap reached, -4 unknown crawl.
  Cost: O(log n) per request plus O(log n) per distinct domain; counters are summed over the batch and
  written once each, and a domain is rescheduled only when the batch changes its head or it was idle.
]]
--- @include "frontier"
--- @include "dupefilter"
--- @include "enqueue"

-- Only the codes (the dupefilter tokens are for ack-enqueue.lua's caller).
local codes = enqueue_requests(6)
return codes

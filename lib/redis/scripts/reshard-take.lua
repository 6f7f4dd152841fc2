--[[
  Take requests out of a partition of the old layout during `frontier reshard` (lib/redis/reshard.ts), once
  reshard-put.lua has stored them in the new one (or, for requests of stopped crawls, instead of moving them): each
  leaves the queue or the delayed set with its counters, as an ack would take it, so the old layout stays
  consistent with what is left in it if the move stops here. A request of a crawl that is no longer alive (stopped,
  or an older holder of its ref) only leaves the queue, as lease.lua drops one: its counters are the sweep's.

  KEYS[1..19]  partition keys (includes/frontier.lua)
  ARGV[1..5]   common frontier arguments
  ARGV[6..]    the members to take (queued or delayed)

  Returns how many were taken (members no longer there are skipped).
  Cost: O(log n) per member; counters are summed over the call and written once each, and each domain that lost a
  queued request is rescheduled once.
]]
--- @include "frontier"

local groups, touched, records = {}, {}, {}
local taken = 0
for i = 6, #ARGV do
  local m = ARGV[i]
  local queued = redis.call('ZREM', K.queue, m) == 1
  if queued or redis.call('ZREM', K.delayed, m) == 1 then
    taken = taken + 1
    local r = parse_member(m)
    local record = records[r.ref]
    if record == nil then
      record = crawl_record(r.ref) or false
      records[r.ref] = record
    end
    if alive_in(record, r) then
      local f = queued_field(r.ref, r.domain, r.pe)
      local g = groups[f]
      if g then g.n = g.n + 1 else groups[f] = { ref = r.ref, domain = r.domain, pe = r.pe, n = 1 } end
    end
    if queued then touched[r.domain] = true end
  end
end
for _, g in pairs(groups) do count_queued(g, -g.n) end
for domain in pairs(touched) do schedule(domain) end
return taken

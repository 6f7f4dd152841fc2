--[[
  A queue's signature in a move of the URL frontier to another partition count (reshard-uf-put.lua computes it on the
  copy it made, reshard-uf-take.lua on the queue it takes from the old partition; lib/redis/url-frontier/
  reshard-queues.ts): the sizes of the queue's five URL structures and its info (but `counted`, which the copy sets).
  The fence stops the servers of this version from writing during a move (includes/uf.lua fence()); two signatures
  that differ say that something else wrote to the queue after it was copied (a server of an older version): the move
  then stops instead of deleting what it wrote. Needs includes/uf.lua first, and K pointed at the queue.
]]

-- '<created>\n<sched>\n<held>\n<hdate>\n<done>\n<info fields, sorted, as field=value, separated by \0>'
local function queue_signature()
  local info = redis.call('HGETALL', K.info)
  local fields = {}
  for j = 1, #info, 2 do
    if info[j] ~= 'counted' then fields[#fields + 1] = info[j] .. '=' .. info[j + 1] end
  end
  table.sort(fields)
  return table.concat({
    redis.call('HLEN', K.created),
    redis.call('ZCARD', K.sched),
    redis.call('ZCARD', K.held),
    redis.call('HLEN', K.hdate),
    redis.call('SCARD', K.done),
    table.concat(fields, '\0'),
  }, '\n')
end

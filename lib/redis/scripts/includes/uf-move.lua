--[[
  A queue's signature in a move of the URL frontier to another partition count (reshard-uf-put.lua computes it on the
  copy it made, reshard-uf-take.lua on the queue it takes from the old partition; lib/redis/url-frontier/
  reshard-queues.ts): the sizes of the queue's five URL structures and its info (but `counted`, which the copy sets).
  The fence stops the servers of this version from writing during a move (includes/uf.lua fence()); two signatures
  that differ say that something else wrote to the queue after it was copied (a server of an older version): the move
  then stops instead of deleting what it wrote. Needs includes/uf.lua first, and K pointed at the queue.
]]

-- The queue's holds as its info has them (includes/uf.lua HOLD_FIELD), into `holds` ('ZADD': a queue restored into a
-- new partition brings its holds there) or out of it ('ZREM': a queue taken from the old takes them away).
-- O(info fields).
local function index_holds(cmd)
  local info = redis.call('HGETALL', K.info)
  local batch = {}
  local function flush()
    if cmd == 'ZADD' then
      redis.call('ZADD', K.holds, unpack(batch))
    else
      redis.call('ZREM', K.holds, unpack(batch))
    end
    batch = {}
  end
  for j = 1, #info, 2 do
    local field = info[j]
    if string.sub(field, 1, #HOLD_FIELD) == HOLD_FIELD then
      if cmd == 'ZADD' then
        local value = info[j + 1]
        batch[#batch + 1] = string.sub(value, string.find(value, ',', 1, true) + 1)
      end
      batch[#batch + 1] = HPREFIX .. string.sub(field, #HOLD_FIELD + 1)
      if #batch >= 1000 then flush() end
    end
  end
  if #batch > 0 then flush() end
end

-- '<created>\n<sched>\n<held (legacy and in the info)>\n<hdate>\n<done>\n<info fields, sorted, as field=value,
-- separated by \0>'
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
    held_count(),
    redis.call('HLEN', K.hdate),
    redis.call('SCARD', K.done),
    table.concat(fields, '\0'),
  }, '\n')
end

--[[
  Takes (reads and deletes) a stored reply (reply-put.lua), or only reads this Redis node's clock.

  `POST /feed` first asks for the clock (ARGV[2] 'clock') before it produces its request, then takes only a reply of
  its own appid stamped at or after that moment: never an older reply to the same uuid, never another app's.
  `POST /poll` has only the uuid (Scrapy Cluster's poll_id): it takes the newest reply, whatever its appid.

  KEYS[1]  the reply hash (keys.ts replyKey)
  ARGV[1]  appid whose reply to take; '' for the newest of any appid
  ARGV[2]  the least stamp (µs) of a reply to take; '' for any; 'clock' to take nothing

  Returns {now µs as a string, the reply JSON or false}.
  Cost: O(appids that stored a reply under this uuid) for '' (usually 1), else O(1).
]]
local t = redis.call('TIME')
local now = string.format('%.0f', tonumber(t[1]) * 1000000 + tonumber(t[2]))
local appid, least = ARGV[1], ARGV[2]
if least == 'clock' then return {now, false} end
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'hash' then return {now, false} end

local function split(v)
  local space = string.find(v, ' ', 1, true)
  return tonumber(string.sub(v, 1, space - 1)), string.sub(v, space + 1)
end

local field, value
if appid ~= '' then
  value = redis.call('HGET', KEYS[1], appid)
  field = appid
else
  local all = redis.call('HGETALL', KEYS[1])
  local newest = -1
  for i = 1, #all, 2 do
    local stamp = split(all[i + 1])
    if stamp > newest then newest, field, value = stamp, all[i], all[i + 1] end
  end
end
if not value then return {now, false} end
local stamp, reply = split(value)
if least ~= '' and stamp < tonumber(least) then return {now, false} end
redis.call('HDEL', KEYS[1], field)
return {now, reply}

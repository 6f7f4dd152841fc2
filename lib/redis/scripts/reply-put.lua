--[[
  Stores a reply under its request uuid for the REST API (`POST /feed` waits for it, `POST /poll` reads it), stamped
  with this Redis node's clock so that `/feed` can tell a reply to its own request from an older one with the same
  uuid (reply-take.lua). One field per appid, so one app's reply never replaces, or reaches, another app's.

  KEYS[1]  the reply hash (keys.ts replyKey): field appid → "<stamp µs> <reply JSON>"
  ARGV[1]  appid ('' when the reply has none)
  ARGV[2]  the reply, JSON
  ARGV[3]  TTL of the hash, seconds

  Returns the stamp (µs since the epoch, as a string).
  Cost: O(1).
]]
local t = redis.call('TIME')
local stamp = string.format('%.0f', tonumber(t[1]) * 1000000 + tonumber(t[2]))
-- A reply stored by an older version (a plain string) makes way.
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then redis.call('DEL', KEYS[1]) end
redis.call('HSET', KEYS[1], ARGV[1], stamp .. ' ' .. ARGV[2])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
return stamp

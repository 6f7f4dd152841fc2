/**
 * The two small stores the monitors write besides the frontier: stats (time-bucketed counters and
 * heartbeats) and stored replies. Narrow interfaces so unit tests use in-memory fakes; the Redis
 * implementations are the real thing (lib/redis/stats.ts, replyKey).
 */
import type { ReplyStore, StatsStore } from '../ports.ts';
import type { RedisClient } from '../redis/client.ts';
import { replyKey } from '../redis/keys.ts';
import { heartbeat, incrementStats, listStatNames, liveMembers, readStats } from '../redis/stats.ts';

export function redisStatsStore(redis: RedisClient, prefix: string): StatsStore {
  return {
    async increment(increments, nowMs) {
      await incrementStats(redis, prefix, increments, nowMs);
    },
    read: (names, nowMs) => readStats(redis, prefix, names, nowMs),
    names: (namePrefix) => listStatNames(redis, prefix, namePrefix),
    beat: (kind, id, nowMs, ttlMs) => heartbeat(redis, prefix, kind, id, nowMs, ttlMs),
    live: (kind, nowMs, ttlMs) => liveMembers(redis, prefix, kind, nowMs, ttlMs),
  };
}

export function redisReplyStore(redis: RedisClient, prefix: string): ReplyStore {
  return {
    async put(uuid, reply, ttlSec) {
      await redis.set(replyKey(prefix, uuid), reply, 'EX', ttlSec);
    },
    async take(uuid) {
      return (await redis.getdel(replyKey(prefix, uuid))) ?? undefined;
    },
  };
}

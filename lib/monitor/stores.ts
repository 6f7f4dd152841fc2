/**
 * The two small stores the monitors write besides the frontier: stats (time-bucketed counters and
 * heartbeats) and stored replies. Narrow interfaces so unit tests use in-memory fakes; the Redis
 * implementations are the real thing (lib/redis/stats.ts, replyKey).
 */
import type { RedisClient } from '../redis/client.ts';
import { replyKey } from '../redis/keys.ts';
import {
  heartbeat,
  incrementStats,
  listStatNames,
  liveMembers,
  readStats,
  type StatsCounts,
  type StatsIncrement,
} from '../redis/stats.ts';

export interface StatsStore {
  increment(increments: StatsIncrement[], nowMs: number): Promise<void>;
  read(names: string[], nowMs: number): Promise<Record<string, StatsCounts>>;
  names(namePrefix: string): Promise<string[]>;
  beat(kind: string, id: string, nowMs: number, ttlMs: number): Promise<void>;
  live(kind: string, nowMs: number, ttlMs: number): Promise<string[]>;
}

export interface ReplyStore {
  /** Stores a reply under its request uuid for `ttlSec`, for REST polling. */
  put(uuid: string, reply: string, ttlSec: number): Promise<void>;
  /** Reads and deletes a stored reply (a reply is returned once). */
  take(uuid: string): Promise<string | undefined>;
}

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

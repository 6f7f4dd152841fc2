/**
 * The two small stores the monitors write besides the frontier: stats (time-bucketed counters and
 * heartbeats) and stored replies. Narrow interfaces so unit tests use in-memory fakes; the Redis
 * implementations are the real thing (lib/redis/stats.ts, replyKey).
 */
import type { ReplyStore, StatsStore } from '../ports.ts';
import type { RedisClient } from '../redis/client.ts';
import { noteFailure, readFailures } from '../redis/failure-log.ts';
import { replyKey } from '../redis/keys.ts';
import { runScript, script } from '../redis/scripts.ts';
import {
  forgetMember,
  heartbeat,
  heartbeatReports,
  incrementStats,
  listStatNames,
  liveMembers,
  readMinutes,
  readStats,
} from '../redis/stats.ts';

export function redisStatsStore(redis: RedisClient, prefix: string): StatsStore {
  return {
    async increment(increments, nowMs) {
      await incrementStats(redis, prefix, increments, nowMs);
    },
    read: (names, nowMs) => readStats(redis, prefix, names, nowMs),
    names: (namePrefix) => listStatNames(redis, prefix, namePrefix),
    beat: (kind, id, nowMs, ttlMs, report) => heartbeat(redis, prefix, kind, id, nowMs, ttlMs, report),
    live: (kind, nowMs, ttlMs) => liveMembers(redis, prefix, kind, nowMs, ttlMs),
    reports: (kind, ids) => heartbeatReports(redis, prefix, kind, ids),
    forget: (kind, id) => forgetMember(redis, prefix, kind, id),
    minutes: (names, nowMs) => readMinutes(redis, prefix, names, nowMs),
    noteFailure: (crawl, note) => noteFailure(redis, prefix, crawl, note),
    failures: (crawls, n) => readFailures(redis, prefix, crawls, n),
  };
}

/** Stored replies in Redis: reply-put.lua and reply-take.lua are their only writers and readers. */
export function redisReplyStore(redis: RedisClient, prefix: string): ReplyStore {
  const take = (uuid: string, appid: string, least: string) =>
    runScript<[string, string | null]>(redis, script('reply-take'), [replyKey(prefix, uuid)], [appid, least]);
  return {
    async put(uuid, reply, ttlSec, appid) {
      await runScript(redis, script('reply-put'), [replyKey(prefix, uuid)], [appid, reply, ttlSec]);
    },
    async mark(uuid) {
      // The clock of the node that holds this uuid's replies (the key routes the script), the one their stamps use.
      return Number((await take(uuid, '', 'clock'))[0]);
    },
    async take(uuid, only) {
      const [, reply] = only ? await take(uuid, only.appid, String(only.after)) : await take(uuid, '', '');
      return reply ?? undefined;
    },
  };
}

/**
 * Stats for the `stats` replies (docs/contract.md): time-bucketed counters and heartbeats, all under the
 * `{<prefix>:stats}` hash tag, so a multi-key script or a pipeline over them stays in one slot.
 *
 * ## Counters
 * A counter is one HASH (`statsCounterKey`). For each window W in {@link STATS_WINDOWS} it keeps
 * {@link BUCKETS_PER_WINDOW} (B = 15) buckets of W / B seconds (60 s for `900`, 40 320 s for `604800`),
 * aligned on the epoch, plus a running `lifetime` total.
 *
 * - **Window count.** The count reported for W is the sum of the B buckets ending with the one that holds
 *   `nowMs`: the events in `[start of bucket (current - B + 1), nowMs]`. That span is between W - W/B and
 *   W seconds long, so the count never includes an event older than W seconds and misses at most the
 *   events of the oldest W/B seconds of the window (for a steady rate, at most 1/15 ≈ 6.7 % low).
 * - **Memory.** Buckets that leave the window are deleted by the next increment, so a counter holds at
 *   most `6 × (15 + 1) + 1 = 97` fields ({@link MAX_FIELDS_PER_COUNTER}), whatever its age and rate.
 *   That stays under Redis's default `hash-max-listpack-entries` (128), so every counter stays in the
 *   compact encoding. Counters carry no TTL: `lifetime` must survive.
 * - **Registry.** Every name incremented is added to a SET (`statsRegistryKey`), so readers list counters
 *   without scanning the keyspace. The registry grows with the number of distinct names: callers choose
 *   names from bounded sets (component, status, machine).
 *
 * ## Heartbeats
 * One ZSET (`heartbeatKey`) of `<kind>\0<id>` → last beat (epoch ms). A member is live while
 * `nowMs - lastBeat < ttlMs`. A beat may carry a report (a crawler process's load): one STRING per member
 * (`heartbeatReportKey`) that expires with the beat, read back by id for the live members only.
 */
import {
  type MinuteCount,
  STATS_WINDOWS,
  type StatsCounts,
  type StatsIncrement,
  type StatsWindow,
} from '../stats-model.ts';
import type { RedisClient } from './client.ts';
import {
  heartbeatKey,
  heartbeatReportKey,
  stateMarkerKey,
  statsCounterKey,
  statsRegistryKey,
  statsTag,
} from './keys.ts';
import { runScript, script } from './scripts.ts';
import { newEpoch } from './state-epoch.ts';

/** Buckets per window: the window's count misses at most one bucket (W / 15 seconds) of its oldest events. */
export const BUCKETS_PER_WINDOW = 15;

/** The most fields a counter's HASH ever holds: B buckets and one `last` marker per window, plus `lifetime`. */
export const MAX_FIELDS_PER_COUNTER = STATS_WINDOWS.length * (BUCKETS_PER_WINDOW + 1) + 1;

const LIFETIME_FIELD = 'lifetime';
const WINDOW_LIST = STATS_WINDOWS.join(',');
const incrScript = script('stats-incr');

function bucketIndex(window: StatsWindow, nowMs: number): number {
  // Same double arithmetic as stats-incr.lua, so both sides name the same bucket.
  return Math.floor(nowMs / ((Number(window) * 1000) / BUCKETS_PER_WINDOW));
}

/** The bucket fields that make up each window's count at `nowMs`, oldest first. */
function windowFields(nowMs: number): Record<StatsWindow, string[]> {
  const fields = {} as Record<StatsWindow, string[]>;
  for (const window of STATS_WINDOWS) {
    const current = bucketIndex(window, nowMs);
    fields[window] = Array.from(
      { length: BUCKETS_PER_WINDOW },
      (_, i) => `${window}:${current - BUCKETS_PER_WINDOW + 1 + i}`,
    );
  }
  return fields;
}

/**
 * Adds to counters: every window's current bucket and `lifetime`, deleting the buckets that left their
 * window, and registers the names. Atomic and one round trip for the whole list (one script call; all the
 * keys share the stats hash tag). Repeated names are summed first. An empty list sends nothing.
 *
 * `nowMs` is the caller's clock: callers on different machines should be within one bucket (60 s) of each
 * other; an increment older than a window's retained buckets counts only in the windows it still falls in.
 *
 * @returns how many of the names were new to the registry.
 * @throws RangeError when an increment is not an integer ≥ 0 or `nowMs` is not a non-negative integer.
 */
export async function incrementStats(
  redis: RedisClient,
  prefix: string,
  increments: StatsIncrement[],
  nowMs: number,
): Promise<number> {
  checkNow(nowMs);
  const totals = new Map<string, number>();
  for (const { name, by = 1 } of increments) {
    if (!Number.isSafeInteger(by) || by < 0)
      throw new RangeError(`stats increment of ${name} must be an integer >= 0, got ${by}`);
    totals.set(name, (totals.get(name) ?? 0) + by);
  }
  if (totals.size === 0) return 0;
  const keys = [statsRegistryKey(prefix)];
  const args: (string | number)[] = [nowMs, BUCKETS_PER_WINDOW, WINDOW_LIST];
  for (const [name, by] of totals) {
    keys.push(statsCounterKey(prefix, name));
    args.push(name, by);
  }
  return runScript<number>(redis, incrScript, keys, args);
}

/**
 * Reads counters as of `nowMs`, one round trip (a pipeline of one HMGET per name, all in the stats slot).
 * A name never incremented reads as zeros. Each window's count follows the bound in the module note;
 * `lifetime` is exact. Read-only: stale buckets are left for the next increment to delete.
 */
export async function readStats(
  redis: RedisClient,
  prefix: string,
  names: string[],
  nowMs: number,
): Promise<Record<string, StatsCounts>> {
  checkNow(nowMs);
  const unique = [...new Set(names)];
  if (unique.length === 0) return {};
  const byWindow = windowFields(nowMs);
  const fields = [LIFETIME_FIELD, ...STATS_WINDOWS.flatMap((w) => byWindow[w])];
  const pipeline = redis.pipeline();
  for (const name of unique) pipeline.hmget(statsCounterKey(prefix, name), ...fields);
  const replies = (await pipeline.exec()) ?? [];
  const result: Record<string, StatsCounts> = {};
  unique.forEach((name, i) => {
    const [error, values] = replies[i] ?? [new Error(`no reply for stats counter ${name}`), null];
    if (error) throw error;
    const numbers = (values as (string | null)[]).map((v) => (v === null ? 0 : Number(v)));
    const counts = { lifetime: numbers[0] ?? 0 } as StatsCounts;
    STATS_WINDOWS.forEach((window, w) => {
      const start = 1 + w * BUCKETS_PER_WINDOW;
      counts[window] = numbers.slice(start, start + BUCKETS_PER_WINDOW).reduce((a, b) => a + b, 0);
    });
    result[name] = counts;
  });
  return result;
}

/**
 * The last 15 minutes of `names`, per minute, summed over the names: the buckets of the `900` window (60 s each,
 * aligned on the epoch), oldest first, the last one the bucket that holds `nowMs` (so still filling). One round trip.
 * This is the history the counters already keep; nothing is written for it.
 */
export async function readMinutes(
  redis: RedisClient,
  prefix: string,
  names: string[],
  nowMs: number,
): Promise<MinuteCount[]> {
  checkNow(nowMs);
  const fields = windowFields(nowMs)['900'];
  const bucketMs = (900 * 1000) / BUCKETS_PER_WINDOW;
  const minutes = fields.map((f) => ({ startMs: Number(f.slice('900:'.length)) * bucketMs, count: 0 }));
  const unique = [...new Set(names)];
  if (unique.length === 0) return minutes;
  const pipeline = redis.pipeline();
  for (const name of unique) pipeline.hmget(statsCounterKey(prefix, name), ...fields);
  for (const [error, values] of (await pipeline.exec()) ?? []) {
    if (error) throw error;
    (values as (string | null)[]).forEach((v, i) => {
      const m = minutes[i];
      if (m !== undefined && v !== null) m.count += Number(v);
    });
  }
  return minutes;
}

/**
 * The registered counter names, sorted. O(registered names): the registry is read whole and filtered
 * here, never the keyspace.
 * @param namePrefix - keep only the names that start with this; by default (`''`) every name.
 */
export async function listStatNames(redis: RedisClient, prefix: string, namePrefix = ''): Promise<string[]> {
  const names = await redis.smembers(statsRegistryKey(prefix));
  return names.filter((n) => n.startsWith(namePrefix)).sort();
}

/**
 * Records that `id` of `kind` (e.g. `crawler`, `redis-monitor`) is alive at `nowMs`, and trims every
 * member whose last beat is `ttlMs` or more before `nowMs`, so the set holds only live members (plus those
 * that died within the last `ttlMs`). One round trip (ZADD and ZREMRANGEBYSCORE in a pipeline).
 *
 * The trim applies to every kind in the prefix: all kinds must share one TTL (the cluster's heartbeat
 * timeout); with different TTLs the shortest one also removes the other kinds' members early.
 *
 * With `report`, the beat also stores it (replacing the last one) for `ttlMs`, in the same round trip. Every beat
 * also creates the stats slot's state marker when it is missing (lib/redis/state-marker.ts).
 *
 * @throws RangeError when `kind` contains a NUL character (the separator of kind and id).
 */
export async function heartbeat(
  redis: RedisClient,
  prefix: string,
  kind: string,
  id: string,
  nowMs: number,
  ttlMs: number,
  report?: string,
): Promise<void> {
  checkKind(kind);
  checkNow(nowMs);
  const key = heartbeatKey(prefix);
  const pipeline = redis
    .pipeline()
    .zadd(key, nowMs, `${kind}\0${id}`)
    .zremrangebyscore(key, '-inf', nowMs - ttlMs);
  if (report !== undefined) pipeline.set(heartbeatReportKey(prefix, kind, id), report, 'PX', ttlMs);
  // The stats slot's state marker (lib/redis/state-marker.ts): created by the first beat, kept for ever.
  pipeline.set(stateMarkerKey(statsTag(prefix)), newEpoch(nowMs), 'NX');
  const replies = await pipeline.exec();
  for (const [error] of replies ?? []) if (error) throw error;
}

/** Removes `id` of `kind` from the heartbeats at once (a process that stops cleanly), instead of at its TTL. */
export async function forgetMember(redis: RedisClient, prefix: string, kind: string, id: string): Promise<void> {
  checkKind(kind);
  await redis.zrem(heartbeatKey(prefix), `${kind}\0${id}`);
}

/**
 * The last report of each of these ids of `kind` that has one (ids without one are left out). One MGET in the stats
 * slot: O(ids), and the caller passes the live ones ({@link liveMembers}), never a listing.
 */
export async function heartbeatReports(
  redis: RedisClient,
  prefix: string,
  kind: string,
  ids: readonly string[],
): Promise<Record<string, string>> {
  checkKind(kind);
  if (ids.length === 0) return {};
  const values = await redis.mget(...ids.map((id) => heartbeatReportKey(prefix, kind, id)));
  const out: Record<string, string> = {};
  ids.forEach((id, i) => {
    const v = values[i];
    if (typeof v === 'string') out[id] = v;
  });
  return out;
}

/**
 * The ids of `kind` whose last beat is less than `ttlMs` before `nowMs` (beats stamped after `nowMs`, from
 * a clock ahead of the reader's, count as live), sorted. O(log n + live members of every kind).
 */
export async function liveMembers(
  redis: RedisClient,
  prefix: string,
  kind: string,
  nowMs: number,
  ttlMs: number,
): Promise<string[]> {
  checkKind(kind);
  checkNow(nowMs);
  const members = await redis.zrangebyscore(heartbeatKey(prefix), `(${nowMs - ttlMs}`, '+inf');
  const head = `${kind}\0`;
  return members
    .filter((m) => m.startsWith(head))
    .map((m) => m.slice(head.length))
    .sort();
}

function checkNow(nowMs: number): void {
  if (!Number.isSafeInteger(nowMs) || nowMs < 0) throw new RangeError(`nowMs must be epoch milliseconds, got ${nowMs}`);
}

function checkKind(kind: string): void {
  if (kind.includes('\0')) throw new RangeError('a heartbeat kind must not contain NUL');
}

import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, describe, expect, test, vi } from 'vitest';
import { heartbeatKey, heartbeatReportKey, statsCounterKey, statsRegistryKey } from '../../lib/redis/keys.ts';
import {
  BUCKETS_PER_WINDOW,
  heartbeat,
  heartbeatReports,
  incrementStats,
  listStatNames,
  liveMembers,
  MAX_FIELDS_PER_COUNTER,
  readStats,
} from '../../lib/redis/stats.ts';
import { STATS_WINDOWS } from '../../lib/stats-model.ts';
import { clusterRedis, uniqueName } from '../helpers/services.ts';

const redis = clusterRedis();
afterAll(() => redis.disconnect());

/** A fixed clock: every test passes `nowMs` explicitly, nothing sleeps. */
const T = Date.UTC(2026, 2, 2, 12, 0, 0);
const SECOND = 1000;
const HOUR = 3600 * SECOND;
const DAY = 24 * HOUR;

const prefixes: string[] = [];
function freshPrefix(): string {
  const prefix = uniqueName();
  prefixes.push(prefix);
  return prefix;
}

afterEach(async () => {
  for (const prefix of prefixes.splice(0)) {
    const names = await redis.smembers(statsRegistryKey(prefix));
    await redis.del(statsRegistryKey(prefix), heartbeatKey(prefix), ...names.map((n) => statsCounterKey(prefix, n)));
  }
});

async function countsOf(prefix: string, name: string, nowMs: number) {
  const all = await readStats(redis, prefix, [name], nowMs);
  return all[name];
}

describe('stats counters', () => {
  test('an increment counts in every window and in lifetime at the moment it happens', async () => {
    const prefix = freshPrefix();
    await incrementStats(redis, prefix, [{ name: 'kafka-monitor:total', by: 3 }], T);
    expect(await countsOf(prefix, 'kafka-monitor:total', T)).toEqual({
      '900': 3,
      '3600': 3,
      '21600': 3,
      '43200': 3,
      '86400': 3,
      '604800': 3,
      lifetime: 3,
    });
  });

  test('increments 1000 s ago count in the 3600 s and longer windows but not in the 900 s window', async () => {
    const prefix = freshPrefix();
    await incrementStats(redis, prefix, [{ name: 'n' }, { name: 'n' }], T - 1000 * SECOND);
    await incrementStats(redis, prefix, [{ name: 'n' }], T - 10 * SECOND);
    expect(await countsOf(prefix, 'n', T)).toEqual({
      '900': 1,
      '3600': 3,
      '21600': 3,
      '43200': 3,
      '86400': 3,
      '604800': 3,
      lifetime: 3,
    });
  });

  test('an increment leaves each window once the window has passed and stays in lifetime forever', async () => {
    const prefix = freshPrefix();
    await incrementStats(redis, prefix, [{ name: 'n' }], T);
    for (const [i, window] of STATS_WINDOWS.entries()) {
      const counts = await countsOf(prefix, 'n', T + Number(window) * SECOND);
      expect(counts?.[window], `window ${window} at ${window} s later`).toBe(0);
      for (const longer of STATS_WINDOWS.slice(i + 1)) expect(counts?.[longer], `window ${longer}`).toBe(1);
      expect(counts?.lifetime).toBe(1);
    }
    expect((await countsOf(prefix, 'n', T + 365 * DAY))?.lifetime).toBe(1);
  });

  test('an event at most W - W/15 s old always counts in window W, and one W s old never does, whatever the bucket alignment', async () => {
    const prefix = freshPrefix();
    // Many read times spread over a bucket, so events land at every position inside their bucket.
    for (let k = 0; k < 12; k++) {
      const now = T + k * 7_919 * SECOND + k * 37;
      for (const window of STATS_WINDOWS) {
        const w = Number(window) * SECOND;
        const inside = `in:${window}:${k}`;
        const outside = `out:${window}:${k}`;
        await incrementStats(redis, prefix, [{ name: inside }], now - (w - w / BUCKETS_PER_WINDOW));
        await incrementStats(redis, prefix, [{ name: outside }], now - w);
        const read = await readStats(redis, prefix, [inside, outside], now);
        expect(read[inside]?.[window], `${inside}`).toBe(1);
        expect(read[outside]?.[window], `${outside}`).toBe(0);
      }
    }
  });

  test('two weeks of hourly increments keep the counter within its field bound and delete buckets that left their window', async () => {
    const prefix = freshPrefix();
    const events: number[] = [];
    for (let h = 0; h < 24 * 7 * 2; h++) {
      const at = T + h * HOUR + (h % 7) * 61 * SECOND;
      events.push(at);
      await incrementStats(redis, prefix, [{ name: 'n' }], at);
      expect(await redis.hlen(statsCounterKey(prefix, 'n'))).toBeLessThanOrEqual(MAX_FIELDS_PER_COUNTER);
    }
    const now = events.at(-1) as number;
    const hash = await redis.hgetall(statsCounterKey(prefix, 'n'));
    expect(MAX_FIELDS_PER_COUNTER).toBe(97);
    for (const field of Object.keys(hash)) {
      const [window, index] = field.split(':');
      if (field === 'lifetime' || index === 'last') continue;
      const width = (Number(window) * SECOND) / BUCKETS_PER_WINDOW;
      const current = Math.floor(now / width);
      expect(Number(index), field).toBeGreaterThan(current - BUCKETS_PER_WINDOW);
      expect(Number(index), field).toBeLessThanOrEqual(current);
    }
    const counts = await countsOf(prefix, 'n', now);
    expect(counts?.lifetime).toBe(events.length);
    for (const window of STATS_WINDOWS) {
      const w = Number(window) * SECOND;
      const surelyIn = events.filter((e) => now - e <= w - w / BUCKETS_PER_WINDOW).length;
      const atMost = events.filter((e) => now - e < w).length;
      expect(counts?.[window], `window ${window}`).toBeGreaterThanOrEqual(surelyIn);
      expect(counts?.[window], `window ${window}`).toBeLessThanOrEqual(atMost);
    }
  });

  test('a counter idle for a month drops all its old buckets at its next increment', async () => {
    const prefix = freshPrefix();
    await incrementStats(redis, prefix, [{ name: 'n', by: 4 }], T);
    await incrementStats(redis, prefix, [{ name: 'n' }], T + 30 * DAY);
    // one bucket and one `last` marker per window, and lifetime
    expect(await redis.hlen(statsCounterKey(prefix, 'n'))).toBe(STATS_WINDOWS.length * 2 + 1);
    const counts = await countsOf(prefix, 'n', T + 30 * DAY);
    expect(counts?.['604800']).toBe(1);
    expect(counts?.lifetime).toBe(5);
  });

  test('an increment from a caller whose clock is behind still counts in the windows that cover its time', async () => {
    const prefix = freshPrefix();
    await incrementStats(redis, prefix, [{ name: 'n' }], T);
    await incrementStats(redis, prefix, [{ name: 'n' }], T - 1000 * SECOND);
    await incrementStats(redis, prefix, [{ name: 'n' }], T - 30 * DAY);
    const counts = await countsOf(prefix, 'n', T);
    expect(counts?.['900']).toBe(1);
    expect(counts?.['3600']).toBe(2);
    expect(counts?.['604800']).toBe(2);
    expect(counts?.lifetime).toBe(3);
  });

  test('one call increments several counters, sums repeated names and registers each name once', async () => {
    const prefix = freshPrefix();
    const added = await incrementStats(
      redis,
      prefix,
      [{ name: 'crawler:m1:200' }, { name: 'crawler:m1:404', by: 5 }, { name: 'crawler:m1:200', by: 2 }],
      T,
    );
    expect(added).toBe(2);
    expect(await incrementStats(redis, prefix, [{ name: 'crawler:m1:200' }, { name: 'rest:total' }], T)).toBe(1);
    const read = await readStats(redis, prefix, ['crawler:m1:200', 'crawler:m1:404'], T);
    expect(read['crawler:m1:200']?.['900']).toBe(4);
    expect(read['crawler:m1:404']?.lifetime).toBe(5);
    expect(await listStatNames(redis, prefix)).toEqual(['crawler:m1:200', 'crawler:m1:404', 'rest:total']);
    expect(await listStatNames(redis, prefix, 'crawler:')).toEqual(['crawler:m1:200', 'crawler:m1:404']);
  });

  test('an increment by 0 registers the name without counting anything', async () => {
    const prefix = freshPrefix();
    await incrementStats(redis, prefix, [{ name: 'n', by: 0 }], T);
    expect(await listStatNames(redis, prefix)).toEqual(['n']);
    expect(await redis.exists(statsCounterKey(prefix, 'n'))).toBe(0);
  });

  test('reading a name never incremented gives zeros, and reading no names sends nothing', async () => {
    const prefix = freshPrefix();
    expect(await countsOf(prefix, 'missing', T)).toEqual({
      '900': 0,
      '3600': 0,
      '21600': 0,
      '43200': 0,
      '86400': 0,
      '604800': 0,
      lifetime: 0,
    });
    expect(await readStats(redis, prefix, [], T)).toEqual({});
    expect(await incrementStats(redis, prefix, [], T)).toBe(0);
  });

  test('a negative or fractional increment is refused before anything is written', async () => {
    const prefix = freshPrefix();
    await expect(incrementStats(redis, prefix, [{ name: 'a' }, { name: 'b', by: -1 }], T)).rejects.toThrow(RangeError);
    await expect(incrementStats(redis, prefix, [{ name: 'a', by: 1.5 }], T)).rejects.toThrow(RangeError);
    expect(await listStatNames(redis, prefix)).toEqual([]);
  });

  test('every key the increment script is given hashes to the same slot as the other stats keys', async () => {
    const prefix = freshPrefix();
    // Scripts run as ioredis commands (defineCommand), which reach the server through sendCommand.
    type Sent = { name: string; args: unknown[] };
    const spy = vi.spyOn(redis as unknown as { sendCommand: (command: Sent) => unknown }, 'sendCommand');
    try {
      await incrementStats(redis, prefix, [{ name: 'a' }, { name: 'crawler:m1:200' }, { name: 'x'.repeat(200) }], T);
      const call = (
        spy.mock.calls.map((c) => c[0] as Sent).find((c) => c.name === 'evalsha' || c.name === 'eval') as Sent
      ).args;
      const keys = call.slice(2, 2 + Number(call[1])) as string[];
      expect(keys).toHaveLength(4);
      const slots = new Set<number>();
      for (const key of [...keys, heartbeatKey(prefix)]) slots.add(await redis.cluster('KEYSLOT', key));
      expect(slots.size).toBe(1);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('heartbeats', () => {
  test('a member is live until ttl has passed since its last beat, and the next heartbeat trims it', async () => {
    const prefix = freshPrefix();
    const ttl = 60 * SECOND;
    await heartbeat(redis, prefix, 'crawler', 'c1', T, ttl);
    expect(await liveMembers(redis, prefix, 'crawler', T + ttl - 1, ttl)).toEqual(['c1']);
    expect(await liveMembers(redis, prefix, 'crawler', T + ttl, ttl)).toEqual([]);
    await heartbeat(redis, prefix, 'crawler', 'c2', T + ttl, ttl);
    expect(await redis.zrange(heartbeatKey(prefix), '0', '-1')).toEqual(['crawler\0c2']);
  });

  test('a repeated beat keeps a member live for another ttl', async () => {
    const prefix = freshPrefix();
    const ttl = 60 * SECOND;
    await heartbeat(redis, prefix, 'crawler', 'c1', T, ttl);
    await heartbeat(redis, prefix, 'crawler', 'c1', T + 50 * SECOND, ttl);
    expect(await liveMembers(redis, prefix, 'crawler', T + 100 * SECOND, ttl)).toEqual(['c1']);
    expect(await redis.zcard(heartbeatKey(prefix))).toBe(1);
  });

  test('live members are listed per kind', async () => {
    const prefix = freshPrefix();
    const ttl = 60 * SECOND;
    await heartbeat(redis, prefix, 'crawler', 'm2', T, ttl);
    await heartbeat(redis, prefix, 'crawler', 'm1', T, ttl);
    await heartbeat(redis, prefix, 'redis-monitor', 'r1', T, ttl);
    expect(await liveMembers(redis, prefix, 'crawler', T, ttl)).toEqual(['m1', 'm2']);
    expect(await liveMembers(redis, prefix, 'redis-monitor', T, ttl)).toEqual(['r1']);
    expect(await liveMembers(redis, prefix, 'rest', T, ttl)).toEqual([]);
  });

  test('a beat carries a report: the last one is read back for the ids asked, in the stats slot', async () => {
    const prefix = freshPrefix();
    const ttl = 60 * SECOND;
    await heartbeat(redis, prefix, 'crawler-task', 'host-a:1', T, ttl, '{"pagesPerSec":1}');
    await heartbeat(redis, prefix, 'crawler-task', 'host-a:1', T + 10 * SECOND, ttl, '{"pagesPerSec":2}');
    await heartbeat(redis, prefix, 'crawler-task', 'host-b:2', T, ttl);
    const live = await liveMembers(redis, prefix, 'crawler-task', T + 10 * SECOND, ttl);
    expect(live).toEqual(['host-a:1', 'host-b:2']);
    expect(await heartbeatReports(redis, prefix, 'crawler-task', live)).toEqual({ 'host-a:1': '{"pagesPerSec":2}' });
    expect(await heartbeatReports(redis, prefix, 'crawler', live)).toEqual({});
    expect(await heartbeatReports(redis, prefix, 'crawler-task', [])).toEqual({});
    const slot = await redis.cluster('KEYSLOT', heartbeatKey(prefix));
    expect(await redis.cluster('KEYSLOT', heartbeatReportKey(prefix, 'crawler-task', 'host-a:1'))).toBe(slot);
    await redis.del(heartbeatReportKey(prefix, 'crawler-task', 'host-a:1'));
  });

  test('a report expires with its beat', async () => {
    const prefix = freshPrefix();
    await heartbeat(redis, prefix, 'crawler-task', 'host-a:1', T, 150, '{}');
    expect(await redis.pttl(heartbeatReportKey(prefix, 'crawler-task', 'host-a:1'))).toBeGreaterThan(0);
    await sleep(250);
    expect(await heartbeatReports(redis, prefix, 'crawler-task', ['host-a:1'])).toEqual({});
  });
});

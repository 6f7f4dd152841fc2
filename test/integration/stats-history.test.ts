/**
 * What the dashboard reads besides the counters' totals (issue 34), on real Redis in cluster mode: the last 15
 * minutes per minute from the counters' own buckets, heartbeats removed at once, and each crawl's failure log.
 */
import { afterAll, describe, expect, test } from 'vitest';
import { FAILURE_LOG_TTL_S, FAILURES_KEPT, noteFailure, readFailures } from '../../lib/redis/failure-log.ts';
import { failureLogKey, heartbeatKey, statsCounterKey, statsRegistryKey } from '../../lib/redis/keys.ts';
import { forgetMember, heartbeat, incrementStats, liveMembers, readMinutes } from '../../lib/redis/stats.ts';
import { clusterRedis, uniqueName } from '../helpers/services.ts';

const redis = clusterRedis();
const prefix = uniqueName();
afterAll(async () => {
  const names = await redis.smembers(statsRegistryKey(prefix));
  await redis.del(statsRegistryKey(prefix), heartbeatKey(prefix), ...names.map((n) => statsCounterKey(prefix, n)));
  await redis.del(failureLogKey(prefix, 'link', 'app', 'c1'), failureLogKey(prefix, 'link', 'app', 'c2'));
  redis.disconnect();
});

/** A fixed clock, 30 s into a minute. */
const T = Date.UTC(2026, 2, 2, 12, 0, 30);
const MINUTE = 60_000;

describe('readMinutes', () => {
  test('gives the 15 minutes ending with the one under way, summed over the names, from the 900 s buckets', async () => {
    await incrementStats(redis, prefix, [{ name: 'crawler:link:200', by: 5 }], T - 3 * MINUTE);
    await incrementStats(redis, prefix, [{ name: 'crawler:link:404', by: 2 }], T - 3 * MINUTE);
    await incrementStats(redis, prefix, [{ name: 'crawler:link:200', by: 7 }], T);
    // Older than 15 minutes: in no minute shown.
    await incrementStats(redis, prefix, [{ name: 'crawler:link:200', by: 100 }], T - 20 * MINUTE);

    const minutes = await readMinutes(redis, prefix, ['crawler:link:200', 'crawler:link:404'], T);

    const start = Math.floor(T / MINUTE) * MINUTE;
    expect(minutes).toHaveLength(15);
    expect(minutes.map((m) => m.startMs)).toEqual(Array.from({ length: 15 }, (_, i) => start - (14 - i) * MINUTE));
    expect(minutes.map((m) => m.count)).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 7]);
  });

  test('gives 15 empty minutes for no names', async () => {
    expect((await readMinutes(redis, prefix, [], T)).every((m) => m.count === 0)).toBe(true);
  });
});

describe('forgetMember', () => {
  test('removes one heartbeat at once and leaves the others', async () => {
    await heartbeat(redis, prefix, 'crawler', 'link|h:1', T, 300_000);
    await heartbeat(redis, prefix, 'crawler', 'link|h:2', T, 300_000);
    await forgetMember(redis, prefix, 'crawler', 'link|h:1');
    expect(await liveMembers(redis, prefix, 'crawler', T, 300_000)).toEqual(['link|h:2']);
  });
});

describe('the failure log', () => {
  test('keeps the latest failed pages of each crawl, newest first, capped, with a TTL', async () => {
    const c1 = { spiderid: 'link', appid: 'app', crawlid: 'c1' };
    for (let i = 0; i < FAILURES_KEPT + 3; i++) {
      await noteFailure(redis, prefix, c1, {
        url: `http://a/${i}`,
        status_code: null,
        exception: 'x'.repeat(400),
        at: i,
      });
    }
    const [notes, none] = await readFailures(redis, prefix, [c1, { ...c1, crawlid: 'c2' }], 100);

    expect(notes).toHaveLength(FAILURES_KEPT);
    expect(notes?.[0]).toEqual({
      url: `http://a/${FAILURES_KEPT + 2}`,
      status_code: null,
      exception: 'x'.repeat(300),
      at: FAILURES_KEPT + 2,
    });
    expect(none).toEqual([]);
    const ttl = await redis.ttl(failureLogKey(prefix, 'link', 'app', 'c1'));
    expect(ttl).toBeGreaterThan(FAILURE_LOG_TTL_S - 60);
    expect((await readFailures(redis, prefix, [c1], 2))[0]).toHaveLength(2);
  });
});

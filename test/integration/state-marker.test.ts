/**
 * State markers and the loss record on the cluster-mode Redis (lib/redis/state-marker.ts): who writes a marker, that
 * a marker is kept, that a loss is noted once per lost epoch (state-loss.lua), and the acknowledgement. Detection over
 * the real writers: a partition emptied (its keys deleted, as a replaced node leaves them) is reported by a watcher
 * that saw it, and never by one that did not.
 */
import { afterAll, describe, expect, test } from 'vitest';
import { redisStateWatch } from '../../lib/monitor/state-watch.ts';
import type { Log, SlotLoss } from '../../lib/ports.ts';
import {
  heartbeatKey,
  partitionKeyList,
  partitionTag,
  stateLossKey,
  stateMarkerKey,
  statsTag,
} from '../../lib/redis/keys.ts';
import { LOSS_KEPT_AFTER_ACK_MS, redisStateStore } from '../../lib/redis/state-marker.ts';
import { heartbeat } from '../../lib/redis/stats.ts';
import { frontierTestRedis, queueRequest, seedCrawl, T0, testFrontier } from '../helpers/frontier.ts';
import { uniqueName } from '../helpers/services.ts';

const redis = frontierTestRedis();
const extraKeys: string[] = [];
afterAll(async () => {
  for (const key of extraKeys) await redis.del(key);
});

function recordingLog(): Log & { errors: string[] } {
  const errors: string[] = [];
  return { errors, info() {}, warn() {}, error: (m) => errors.push(m) };
}

const seed = (crawlid: string, url = 'http://a.example.com/') => ({
  crawl: seedCrawl('app', crawlid),
  request: queueRequest(url),
});

describe('state markers', () => {
  test('the first enqueue of a partition creates its marker and later ones keep it; the first heartbeat makes the stats marker', async () => {
    const frontier = testFrontier(redis);
    const p = frontier.partitionFor('link');
    const key = stateMarkerKey(partitionTag(p));
    expect(await redis.get(key)).toBeNull();

    await frontier.enqueue('link', [seed('c1')], T0);
    const epoch = await redis.get(key);
    await frontier.enqueue('link', [seed('c2')], T0);

    expect(epoch).toMatch(/^[0-9a-z]+-[0-9a-f]{12}$/);
    expect(await redis.get(key)).toBe(epoch);
    expect(await redis.pttl(key)).toBe(-1);

    const prefix = uniqueName();
    extraKeys.push(stateMarkerKey(statsTag(prefix)), heartbeatKey(prefix));
    await heartbeat(redis, prefix, 'crawler', 'a', T0, 60_000);
    const stats = await redis.get(stateMarkerKey(statsTag(prefix)));
    await heartbeat(redis, prefix, 'crawler', 'a', T0 + 1, 60_000);
    expect(stats).not.toBeNull();
    expect(await redis.get(stateMarkerKey(statsTag(prefix)))).toBe(stats);
  });

  test('a partition emptied and used again: the watcher that saw it reports it with the reason, a new watcher does not', async () => {
    const frontier = testFrontier(redis);
    const prefix = frontier.partitionFor('link').prefix;
    extraKeys.push(stateLossKey(prefix), stateMarkerKey(statsTag(prefix)));
    const oldLog = recordingLog();
    const old = redisStateWatch(redis, { prefix, typeEnabled: true, log: oldLog, who: 'old' });
    await frontier.enqueue('link', [seed('c1')], T0);
    expect(await old.check(['link'])).toEqual([]);

    const p = frontier.partitionFor('link');
    await redis.del(...partitionKeyList(p), stateMarkerKey(partitionTag(p)));
    await frontier.enqueue('link', [seed('c2', 'http://b.example.com/')], T0);
    const freshLog = recordingLog();
    const fresh = redisStateWatch(redis, { prefix, typeEnabled: true, log: freshLog, who: 'fresh' });

    expect(await fresh.check(['link'])).toEqual([]);
    const losses = await old.check(['link']);

    expect(losses).toHaveLength(1);
    expect(losses[0]).toMatchObject({ tag: partitionTag(p) });
    expect(losses[0]?.found).toBe(await redis.get(stateMarkerKey(partitionTag(p))));
    expect(oldLog.errors[0]).toContain(`frontier partition ${partitionTag(p)} was emptied`);
    expect(freshLog.errors).toEqual([]);
    // The spider type was registered again with the new marker, so the periodic jobs find the partition.
    expect(await frontier.spiders()).toEqual(['link']);
    expect((await old.lostFor('link')).map((l) => l.tag)).toEqual([partitionTag(p)]);
  });

  test('a loss is noted once per lost epoch; acknowledged, it stays closed for late detectors and is kept 7 days', async () => {
    const prefix = uniqueName();
    extraKeys.push(stateLossKey(prefix));
    const store = redisStateStore(redis, prefix);
    const loss: SlotLoss = { tag: `{${prefix}:f:link:0}`, epoch: 'e1', at: T0, reason: 'gone' };
    expect(await store.record()).toBeUndefined();

    expect(await store.note(loss)).toBe(true);
    expect(await store.note({ ...loss, at: T0 + 5 })).toBe(false);
    expect(await store.record()).toMatchObject({ losses: [loss], open: [loss] });
    expect(await redis.pttl(stateLossKey(prefix))).toBe(-1);

    const acked = await store.ack(T0 + 10);
    expect(acked).toMatchObject({ ackedAt: T0 + 10, open: [] });
    // Another process detecting the same loss later does not reopen it.
    expect(await store.note({ ...loss, at: T0 + 20 })).toBe(false);
    expect((await store.record())?.open).toEqual([]);
    const ttl = await redis.pttl(stateLossKey(prefix));
    expect(ttl).toBeGreaterThan(LOSS_KEPT_AFTER_ACK_MS - 60_000);

    // A new loss (another epoch) is open again and kept until acknowledged.
    const next: SlotLoss = { ...loss, epoch: 'e2', at: T0 + 30 };
    expect(await store.note(next)).toBe(true);
    expect((await store.record())?.open).toEqual([next]);
    expect(await redis.pttl(stateLossKey(prefix))).toBe(-1);
  });
});

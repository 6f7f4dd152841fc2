/**
 * Exact politeness (docs/design.md §5), against the cluster-mode Redis: the throttle margin, Redis's own clock,
 * a Retry-After that holds the whole domain, and robots.txt Crawl-delay as a minimum spacing. Simulated time
 * (the `now` of each call) except where Redis's clock is the point.
 */
import { describe, expect, test } from 'vitest';
import type { Lease } from '../../lib/frontier-model.ts';
import type { Frontier } from '../../lib/redis/frontier.ts';
import { partitionKeys } from '../../lib/redis/keys.ts';
import {
  childCrawl,
  frontierTestRedis,
  leaseOne,
  maxInWindow,
  queueRequest,
  seedCrawl,
  simulateLeasers,
  T0,
  testFrontier,
} from '../helpers/frontier.ts';

const redis = frontierTestRedis();

async function fill(frontier: Frontier, domains: string[], perDomain: number, now = T0) {
  const seed = seedCrawl('app', 'c1');
  let first = true;
  for (const domain of domains) {
    const outcomes = await frontier.enqueue(
      'link',
      Array.from({ length: perDomain }, (_, i) => {
        const crawl = first ? seed : childCrawl(seed);
        first = false;
        return { crawl, request: queueRequest(`http://www.${domain}/${i}`) };
      }),
      now,
    );
    expect(outcomes.every((o) => o === 'queued')).toBe(true);
  }
}

/** A throttle key's fetch times as stored: 13-digit epoch ms, ascending, nothing between them (null: none). */
async function throttleLog(key: string, field: string): Promise<number[] | null> {
  const state = await redis.hget(key, field);
  if (state === null) return null;
  expect(state).toMatch(/^(\d{13})+$/);
  return (state.match(/\d{13}/g) ?? []).map(Number);
}

async function redisNow(): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

describe('exact politeness', () => {
  test('the margin is spread over the window: 5 per 2 s with 100 ms is one lease every 420 ms, never 6 in 2.1 s', async () => {
    const frontier = testFrontier(redis, { hits: 5, windowSec: 2, moderated: true, throttleMarginMs: 100 });
    await fill(frontier, ['a.com'], 100);
    const leases = await simulateLeasers(frontier, 'link', { leasers: 4, start: T0, durationMs: 8400, stepMs: 10 });
    const times = leases.map((l) => l.at);
    expect(times).toEqual(Array.from({ length: 20 }, (_, i) => T0 + i * 420));
    // A fetch arriving up to 100 ms late still keeps every 2 s window at 5.
    const late = times.map((t, i) => t + (i % 2 === 0 ? 100 : 0));
    expect(maxInWindow(late, 2000)).toBe(5);
  });

  test('the margin widens the sliding window too: a burst of 3, then the next burst only 2.1 s later', async () => {
    const frontier = testFrontier(redis, { hits: 3, windowSec: 2, moderated: false, throttleMarginMs: 100 });
    await fill(frontier, ['a.com'], 20);
    const leases = await simulateLeasers(frontier, 'link', { leasers: 3, start: T0, durationMs: 2200, stepMs: 50 });
    expect(leases.map((l) => l.at)).toEqual([T0, T0, T0, T0 + 2100, T0 + 2100, T0 + 2100]);
  });

  test("with redisClock the scripts use Redis's TIME and ignore the caller's clock", async () => {
    const frontier = testFrontier(redis, { hits: 1, windowSec: 60, moderated: true, redisClock: true });
    await fill(frontier, ['a.com'], 3, await redisNow());
    const before = await redisNow();
    // A caller whose clock is an hour ahead still gets a lease now, and the next one a minute after Redis's now.
    const first = await leaseOne(frontier, 'link', { now: before + 3_600_000 });
    expect(first.leased).toBe(true);
    const second = await leaseOne(frontier, 'link', { now: before + 3_600_000 });
    expect(second.leased).toBe(false);
    const due = (second as { nextDueMs: number }).nextDueMs;
    expect(due).toBeGreaterThanOrEqual(before + 60_000);
    expect(due).toBeLessThan((await redisNow()) + 60_000 + 1);
  });

  test('a Retry-After holds the whole domain for every leaser; other domains go on; it ends on time', async () => {
    const frontier = testFrontier(redis);
    await fill(frontier, ['busy.com', 'calm.org'], 5);
    const first = await leaseOne(frontier, 'link', { now: T0 });
    expect(first.leased).toBe(true);
    if (!first.leased) return;
    const busy = first.lease.domain;
    // The site answered 503 with Retry-After: 30 s: retry this request in 30 s and hold the domain as long.
    expect((await frontier.retry(first.lease, 30_000, T0, 30_000)).retried).toBe(true);
    const during = await simulateLeasers(frontier, 'link', { leasers: 3, start: T0, durationMs: 29_900, stepMs: 100 });
    expect(during.length).toBeGreaterThan(0);
    expect(during.filter((l) => l.lease.domain === busy)).toEqual([]);
    const after = await leaseOne(frontier, 'link', { now: T0 + 30_000 });
    expect(after.leased && after.lease.domain).toBe(busy);
    // The hold is gone once it passed (a field of the throttle hash, removed lazily).
    const throttle = partitionKeys(frontier.partitionFor('link')).throttle;
    expect(await redis.hexists(throttle, `${busy}\u0000hold`)).toBe(0);
  });

  test('a shorter Retry-After never shortens a longer hold', async () => {
    const frontier = testFrontier(redis);
    await fill(frontier, ['busy.com'], 5);
    const a = await leaseOne(frontier, 'link', { now: T0 });
    const b = await leaseOne(frontier, 'link', { now: T0 });
    if (!a.leased || !b.leased) throw new Error('expected two leases');
    await frontier.retry(a.lease, 1000, T0, 60_000);
    await frontier.retry(b.lease, 1000, T0, 5_000);
    expect((await leaseOne(frontier, 'link', { now: T0 + 59_000 })).leased).toBe(false);
    expect((await leaseOne(frontier, 'link', { now: T0 + 60_000 })).leased).toBe(true);
  });

  test('Crawl-delay is a minimum spacing for its domain, the stricter of it and the throttle, and can be lifted', async () => {
    const frontier = testFrontier(redis, { hits: 10, windowSec: 1, moderated: true });
    await fill(frontier, ['slow.com'], 50);
    const p = frontier.partitionFor('link');
    await frontier.setCrawlDelay(p, 'slow.com', 2000);
    const slow = await simulateLeasers(frontier, 'link', { leasers: 3, start: T0, durationMs: 6100, stepMs: 50 });
    expect(slow.map((l) => l.at)).toEqual([T0, T0 + 2000, T0 + 4000, T0 + 6000]);
    // A Crawl-delay shorter than the throttle's spacing (100 ms) changes nothing; none at all restores it.
    await frontier.setCrawlDelay(p, 'slow.com', 50);
    const fast = await simulateLeasers(frontier, 'link', {
      leasers: 2,
      start: T0 + 8000,
      durationMs: 500,
      stepMs: 50,
    });
    expect(fast.map((l) => l.at)).toEqual([T0 + 8000, T0 + 8100, T0 + 8200, T0 + 8300, T0 + 8400]);
    await frontier.setCrawlDelay(p, 'slow.com', undefined);
    expect(await redis.hexists(partitionKeys(p).throttle, 'slow.com\u0000cd')).toBe(0);
  });

  test('throttleScope names where a Crawl-delay lives: shared by the spider types of one throttle, not across them', async () => {
    // Per spider type (SCHEDULER_TYPE_ENABLED): each type has its own throttle, so its own name.
    const perType = testFrontier(redis, { hits: 10, windowSec: 1, moderated: true });
    const link = { handle: 'x', partition: perType.partitionFor('link') };
    const wander = { handle: 'y', partition: perType.partitionFor('wandering') };
    expect(perType.throttleScope(link)).toBe(perType.throttleScope({ ...link, handle: 'z' }));
    expect(perType.throttleScope(link)).not.toBe(perType.throttleScope(wander));
    // One throttle for every type: one name, and a Crawl-delay told for one type holds for the other.
    const shared = testFrontier(redis, { hits: 10, windowSec: 1, moderated: true, typeEnabled: false });
    const a = { handle: 'x', partition: shared.partitionFor('link') };
    const b = { handle: 'y', partition: shared.partitionFor('wandering') };
    expect(shared.throttleScope(a)).toBe(shared.throttleScope(b));
    await shared.setCrawlDelay(a.partition, 'slow.com', 2000);
    expect(await redis.hget(partitionKeys(b.partition).throttle, 'slow.com\u0000cd')).toBe('2000');
    // Another frontier (another key prefix) is another name.
    const other = testFrontier(redis, { hits: 10, windowSec: 1, moderated: true });
    expect(other.throttleScope({ handle: 'x', partition: other.partitionFor('link') })).not.toBe(
      perType.throttleScope(link),
    );
  });

  test('a sliding-window log keeps only what can still matter: the fetches of the last window, and the latest', async () => {
    const frontier = testFrontier(redis, { hits: 1000, windowSec: 1, moderated: false, throttleMarginMs: 100 });
    await fill(frontier, ['a.com'], 10);
    const throttle = partitionKeys(frontier.partitionFor('link')).throttle;
    for (const at of [T0, T0 + 10, T0 + 20]) expect((await leaseOne(frontier, 'link', { now: at })).leased).toBe(true);
    expect(await throttleLog(throttle, 'a.com')).toEqual([T0, T0 + 10, T0 + 20]);
    // 1,110 ms after the first fetch: it and the second are out of the window + margin (1,100 ms); the third stays.
    expect((await leaseOne(frontier, 'link', { now: T0 + 1110 })).leased).toBe(true);
    expect(await throttleLog(throttle, 'a.com')).toEqual([T0 + 20, T0 + 1110]);
    // An hour later only the new fetch is left, and a Crawl-delay (+ margin) still counts from the latest fetch.
    await frontier.setCrawlDelay(frontier.partitionFor('link'), 'a.com', 5000);
    expect((await leaseOne(frontier, 'link', { now: T0 + 3_600_000 })).leased).toBe(true);
    expect(await throttleLog(throttle, 'a.com')).toEqual([T0 + 3_600_000]);
    expect((await leaseOne(frontier, 'link', { now: T0 + 3_605_099 })).leased).toBe(false);
    expect((await leaseOne(frontier, 'link', { now: T0 + 3_605_100 })).leased).toBe(true); // + the 100 ms margin
  });

  test('a big sliding-window log is read by position: 20,000 fetches in the window, the next lease waits for the first to leave it', async () => {
    const frontier = testFrontier(redis, { hits: 20_000, windowSec: 60, moderated: false, throttleMarginMs: 100 });
    await fill(frontier, ['a.com'], 3);
    const throttle = partitionKeys(frontier.partitionFor('link')).throttle;
    // 20,000 fetches 2 ms apart from T0 (the last at T0 + 39,998), as a busy domain's log holds them.
    const times = Array.from({ length: 20_000 }, (_, i) => T0 + 2 * i);
    await redis.hset(throttle, 'a.com', times.map((t) => String(t).padStart(13, '0')).join(''));
    expect((await leaseOne(frontier, 'link', { now: T0 + 40_000 })).leased).toBe(false);
    // The oldest leaves the window (60 s + 100 ms margin) at T0 + 60,100.
    expect((await leaseOne(frontier, 'link', { now: T0 + 60_099 })).leased).toBe(false);
    expect((await leaseOne(frontier, 'link', { now: T0 + 60_100 })).leased).toBe(true);
    // That lease cut what fell out of the window (only the first: T0 + 2 is still in it) and appended its own.
    const log = (await throttleLog(throttle, 'a.com')) ?? [];
    expect(log).toHaveLength(20_000);
    expect(log[0]).toBe(T0 + 2);
    expect(log.at(-1)).toBe(T0 + 60_100);
  });

  test('a log stored the old way (comma-separated) is read, and rewritten in place on the next fetch', async () => {
    const frontier = testFrontier(redis, { hits: 3, windowSec: 1, moderated: false, throttleMarginMs: 100 });
    await fill(frontier, ['a.com'], 5);
    const throttle = partitionKeys(frontier.partitionFor('link')).throttle;
    await redis.hset(throttle, 'a.com', `${T0},${T0 + 10},${T0 + 20}`);
    // Three in the window: the next is due when the first leaves it (T0 + 1,100).
    expect((await leaseOne(frontier, 'link', { now: T0 + 1099 })).leased).toBe(false);
    expect((await leaseOne(frontier, 'link', { now: T0 + 1100 })).leased).toBe(true);
    expect(await throttleLog(throttle, 'a.com')).toEqual([T0 + 10, T0 + 20, T0 + 1100]);
  });

  test('a moderated throttle reads the latest fetch of a log left by a sliding window (the setting was changed)', async () => {
    const frontier = testFrontier(redis, { hits: 10, windowSec: 1, moderated: true, throttleMarginMs: 100 });
    await fill(frontier, ['a.com'], 5);
    const throttle = partitionKeys(frontier.partitionFor('link')).throttle;
    await redis.hset(throttle, 'a.com', [T0, T0 + 50].map((t) => String(t).padStart(13, '0')).join(''));
    // Spacing (1,000 + 100) / 10 = 110 ms after the latest (T0 + 50).
    expect((await leaseOne(frontier, 'link', { now: T0 + 159 })).leased).toBe(false);
    expect((await leaseOne(frontier, 'link', { now: T0 + 160 })).leased).toBe(true);
    expect(await throttleLog(throttle, 'a.com')).toEqual([T0 + 160]);
  });

  test("the throttle's margin is added to a Crawl-delay: a fetch up to 50 ms late (no restamp) still keeps the delay", async () => {
    for (const moderated of [true, false]) {
      const frontier = testFrontier(redis, { hits: 10, windowSec: 1, moderated, throttleMarginMs: 100 });
      await fill(frontier, ['slow.com'], 10);
      await frontier.setCrawlDelay(frontier.partitionFor('link'), 'slow.com', 1000);
      const leases = await simulateLeasers(frontier, 'link', { leasers: 2, start: T0, durationMs: 3400, stepMs: 50 });
      expect(leases.map((l) => l.at)).toEqual([T0, T0 + 1100, T0 + 2200, T0 + 3300]);
    }
  });

  test('a Crawl-delay set while its domain waits on the throttle holds: the domain is not leased before it', async () => {
    const frontier = testFrontier(redis, { hits: 10, windowSec: 1, moderated: true });
    await fill(frontier, ['slow.com', 'other.com'], 3);
    const p = frontier.partitionFor('link');
    const first = await leaseOne(frontier, 'link', { now: T0 });
    expect(first.leased && first.lease.domain).toBe('slow.com');
    // slow.com now waits until T0 + 100 (the throttle's spacing); its Crawl-delay arrives meanwhile.
    await frontier.setCrawlDelay(p, 'slow.com', 2000);
    const leased: string[] = [];
    for (let at = T0 + 100; at < T0 + 2000; at += 100) {
      const r = await leaseOne(frontier, 'link', { now: at });
      if (r.leased) leased.push(r.lease.domain);
    }
    expect(leased).not.toContain('slow.com');
    expect(leased).toContain('other.com');
    const due = await leaseOne(frontier, 'link', { now: T0 + 2000 });
    expect(due.leased && due.lease.domain).toBe('slow.com');
  });
});

describe('restamp: the throttle hit moves to when the fetch really starts', () => {
  async function leaseAt(frontier: Frontier, now: number) {
    const r = await leaseOne(frontier, 'link', { now });
    if (!r.leased) throw new Error(`expected a lease at ${now}`);
    return r.lease;
  }

  async function firstLease(frontier: Frontier, from: number, to: number, stepMs = 50) {
    for (let at = from; at <= to; at += stepMs) if ((await leaseOne(frontier, 'link', { now: at })).leased) return at;
    return undefined;
  }

  test('3 fetches allowed per ms: a late fetch moves only its own hit, and its new ms has room for 2 more', async () => {
    const frontier = testFrontier(redis, { hits: 3003, windowSec: 1, moderated: true });
    await fill(frontier, ['a.com'], 10);
    const three = (await frontier.leaseMany('link', 8, { now: T0 })).leases;
    expect(three.map((l) => l.hitMs)).toEqual([T0, T0, T0]);
    expect(await frontier.restamp(three[2] as Lease, { maxWaitMs: 10_000, now: T0 + 5 })).toEqual({ waitMs: 0 });
    expect((await frontier.leaseMany('link', 8, { now: T0 + 5 })).leases).toHaveLength(2);
    // A fetch that starts in its lease's ms keeps its one hit there: 2 leased, 1 more fits (not 0, not 2).
    const again = testFrontier(redis, { hits: 3003, windowSec: 1, moderated: true });
    await fill(again, ['a.com'], 10);
    const two = (await again.leaseMany('link', 2, { now: T0 })).leases;
    expect(await again.restamp(two[0] as Lease, { maxWaitMs: 10_000, now: T0 })).toEqual({ waitMs: 0 });
    expect((await again.leaseMany('link', 8, { now: T0 })).leases).toHaveLength(1);
  });

  test('a lease reports its hit; a fetch 500 ms late moves it, so the next lease comes 500 ms later too', async () => {
    const frontier = testFrontier(redis, { hits: 1, windowSec: 2, moderated: true });
    await fill(frontier, ['a.com'], 5);
    const a = await leaseAt(frontier, T0);
    expect(a.hitMs).toBe(T0);
    expect(await frontier.restamp(a, { maxWaitMs: 10_000, now: T0 + 500 })).toEqual({ waitMs: 0 });
    // Without the restamp the next lease would be at T0 + 2000.
    expect(await firstLease(frontier, T0 + 1900, T0 + 3000)).toBe(T0 + 2500);
  });

  test('a Crawl-delay counts from the late fetch: 1 s after it, never 675 ms', async () => {
    const frontier = testFrontier(redis, { hits: 1000, windowSec: 1, moderated: false });
    await fill(frontier, ['delay.com'], 5);
    await frontier.setCrawlDelay(frontier.partitionFor('link'), 'delay.com', 1000);
    await leaseAt(frontier, T0);
    // The second lease comes at T0 + 1000, its fetch 325 ms later (its worker read robots.txt first).
    const b = await leaseAt(frontier, T0 + 1000);
    expect(await frontier.restamp(b, { maxWaitMs: 10_000, now: T0 + 1325 })).toEqual({ waitMs: 0 });
    expect((await leaseOne(frontier, 'link', { now: T0 + 2000 })).leased).toBe(false);
    expect(await firstLease(frontier, T0 + 2000, T0 + 3000, 25)).toBe(T0 + 2325);
  });

  test('when a later lease took the turn meanwhile, the late fetch waits for the next turn, and so does the one after', async () => {
    const frontier = testFrontier(redis, { hits: 1, windowSec: 1, moderated: true });
    await fill(frontier, ['a.com'], 5);
    const a = await leaseAt(frontier, T0);
    const b = await leaseAt(frontier, T0 + 1000); // a's fetch has not started yet
    // a starts at T0 + 1200: b holds the turn of T0 + 1000, so a fetches at T0 + 2000.
    expect(await frontier.restamp(a, { maxWaitMs: 10_000, now: T0 + 1200 })).toEqual({ waitMs: 800 });
    // b is late too (T0 + 1300): its own hit is no longer the last, so it goes after a, at T0 + 3000.
    expect(await frontier.restamp(b, { maxWaitMs: 10_000, now: T0 + 1300 })).toEqual({ waitMs: 1700 });
    expect(await firstLease(frontier, T0 + 1300, T0 + 4500)).toBe(T0 + 4000);
  });

  test('the sliding-window log takes the lease out and puts the late fetch in order', async () => {
    const frontier = testFrontier(redis, { hits: 2, windowSec: 1, moderated: false });
    await fill(frontier, ['a.com'], 6);
    const a = await leaseAt(frontier, T0);
    await leaseAt(frontier, T0 + 100);
    const throttle = partitionKeys(frontier.partitionFor('link')).throttle;
    expect(await frontier.restamp(a, { maxWaitMs: 10_000, now: T0 + 400 })).toEqual({ waitMs: 0 });
    expect(await throttleLog(throttle, 'a.com')).toEqual([T0 + 100, T0 + 400]);
    // Two fetches in [T0 + 100, T0 + 1100): the third waits for T0 + 1100, the fourth for T0 + 1400.
    expect(await firstLease(frontier, T0 + 500, T0 + 1200)).toBe(T0 + 1100);
    expect(await firstLease(frontier, T0 + 1150, T0 + 1500)).toBe(T0 + 1400);
    expect(await throttleLog(throttle, 'a.com')).toEqual([T0 + 1100, T0 + 1400]);
  });

  test('a turn further off than maxWaitMs: not fetched; the request is leased again at the next turn, first in line', async () => {
    const frontier = testFrontier(redis, { hits: 1, windowSec: 60, moderated: true });
    await fill(frontier, ['a.com'], 3);
    const a = await leaseAt(frontier, T0);
    const b = await leaseAt(frontier, T0 + 60_000); // a's fetch has not started yet
    // a starts 500 ms after b took the turn: the next turn is 59.5 s off.
    expect(await frontier.restamp(a, { maxWaitMs: 10_000, now: T0 + 60_500 })).toBeNull();
    expect(await frontier.restamp(a, { maxWaitMs: 10_000, now: T0 + 60_600 })).toBeNull(); // not leased any more
    expect(b.url).not.toBe(a.url);
    expect((await leaseOne(frontier, 'link', { now: T0 + 119_000 })).leased).toBe(false);
    const again = await leaseAt(frontier, T0 + 120_000);
    expect(again.url).toBe(a.url);
    const info = await frontier.crawlInfo('link', 'app', 'c1', T0);
    expect(info).toMatchObject({ queued: 1, leased: 2 });
  });

  test('a domain held by a Retry-After meanwhile, or a lease reclaimed meanwhile: not fetched, queued once', async () => {
    const frontier = testFrontier(redis, { hits: 10, windowSec: 1, moderated: true });
    await fill(frontier, ['a.com'], 3);
    const a = await leaseAt(frontier, T0);
    const b = await leaseAt(frontier, T0 + 100);
    expect((await frontier.retry(b, 1000, T0 + 100, 300_000)).retried).toBe(true);
    expect(await frontier.restamp(a, { maxWaitMs: 10_000, now: T0 + 200 })).toBeNull();
    expect((await leaseOne(frontier, 'link', { now: T0 + 299_000 })).leased).toBe(false);
    const c = await leaseAt(frontier, T0 + 300_100);
    expect(await frontier.reclaim('link', T0 + 10_000_000)).toBe(1);
    expect(await frontier.restamp(c, { maxWaitMs: 10_000, now: T0 + 10_000_000 })).toBeNull();
    expect(await frontier.crawlInfo('link', 'app', 'c1', T0)).toMatchObject({ queued: 3, leased: 0 });
  });
});

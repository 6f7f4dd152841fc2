import { describe, expect, test } from 'vitest';
import type { Frontier } from '../../lib/redis/frontier.ts';
import { partitionKeys } from '../../lib/redis/keys.ts';
import {
  childCrawl,
  frontierTestRedis,
  leaseAll,
  leaseOne,
  maxInWindow,
  queueRequest,
  seedCrawl,
  simulateLeasers,
  T0,
  testFrontier,
} from '../helpers/frontier.ts';

const redis = frontierTestRedis();

/** 5 fetches per 2 s: moderated, one every 400 ms. */
const FIVE_PER_2S = { hits: 5, windowSec: 2 } as const;

/** Queues `n` requests of `domain` (priority 1) for spider `spider` under crawl app/c1. */
async function fill(frontier: Frontier, domain: string, n: number, now = T0, spider = 'link', crawlid = 'c1') {
  const seed = seedCrawl('app', crawlid, { spiderid: spider });
  const outcomes = await frontier.enqueue(
    spider,
    Array.from({ length: n }, (_, i) => ({
      crawl: i === 0 ? seed : childCrawl(seed),
      request: queueRequest(`http://www.${domain}/${spider}/${i}`),
    })),
    now,
  );
  expect(outcomes.every((o) => o === 'queued')).toBe(true);
}

describe('frontier throttle', () => {
  test('moderated: 3 concurrent leasers on one domain get leases exactly 400 ms apart, at most 5 in any 2 s', async () => {
    const frontier = testFrontier(redis, { ...FIVE_PER_2S, moderated: true });
    await fill(frontier, 'a.com', 100);
    const leases = await simulateLeasers(frontier, 'link', { leasers: 3, start: T0, durationMs: 10_000, stepMs: 50 });
    const times = leases.map((l) => l.at);
    expect(maxInWindow(times, 2000)).toBeLessThanOrEqual(5);
    for (let i = 1; i < times.length; i++)
      expect((times[i] as number) - (times[i - 1] as number)).toBeGreaterThanOrEqual(400);
    // Not stricter than it must be: a lease at every 400 ms mark.
    expect(times).toEqual(Array.from({ length: 25 }, (_, i) => T0 + i * 400));
    expect(new Set(leases.map((l) => l.lease.handle)).size).toBe(leases.length);
  });

  test('moderated spacing rounds up: 3 per 2 s never puts 4 leases inside one 2 s window', async () => {
    const frontier = testFrontier(redis, { hits: 3, windowSec: 2, moderated: true });
    await fill(frontier, 'a.com', 50);
    const leases = await simulateLeasers(frontier, 'link', { leasers: 3, start: T0, durationMs: 2500, stepMs: 1 });
    const times = leases.map((l) => l.at);
    expect(maxInWindow(times, 2000)).toBe(3);
    expect(times.slice(0, 4)).toEqual([T0, T0 + 667, T0 + 1334, T0 + 2001]);
  });

  test('moderated, more than one fetch per ms: 3,003 per 1 s takes 3 leases in the same ms, the 4th waits for the next ms', async () => {
    // floor(3003 / (1000 ms + 1)) = 3 per ms; before, a moderated throttle never gave one domain two leases in one ms
    // (its spacing rounds up to 1 ms), so 100,000 per s was 1,000 per s and a lease call took one request per domain.
    const frontier = testFrontier(redis, { hits: 3003, windowSec: 1, moderated: true });
    await fill(frontier, 'a.com', 5000);
    const first = await frontier.leaseMany('link', 8, { now: T0 });
    expect(first.leases).toHaveLength(3);
    expect(first.nextDueMs).toBe(T0 + 1);
    expect((await frontier.leaseMany('link', 8, { now: T0 })).leases).toHaveLength(0);
    expect((await frontier.leaseMany('link', 2, { now: T0 + 1 })).leases).toHaveLength(2);
    expect((await frontier.leaseMany('link', 8, { now: T0 + 1 })).leases).toHaveLength(1);
    // Two leasers asking for 2 each every ms for 1.5 s: 3 per ms, never more than 3,003 in a 1 s window.
    const times: number[] = [];
    for (let at = T0 + 2; at < T0 + 1502; at++) {
      const got = await Promise.all([0, 1].map(() => frontier.leaseMany('link', 2, { now: at })));
      for (const r of got) for (const _ of r.leases) times.push(at);
    }
    expect(times).toHaveLength(1500 * 3);
    expect(maxInWindow(times, 1000)).toBe(3000);
  });

  test('moderated, more than one fetch per ms: a Crawl-delay still spaces every fetch, and 1,000 per 1 s stays 1 per ms', async () => {
    const delayed = testFrontier(redis, { hits: 100_000, windowSec: 1, moderated: true });
    await fill(delayed, 'a.com', 10);
    await delayed.setCrawlDelay(delayed.partitionFor('link'), 'a.com', 5);
    const d = await delayed.leaseMany('link', 8, { now: T0 });
    expect(d.leases).toHaveLength(1);
    expect(d.nextDueMs).toBe(T0 + 5);
    const oneMs = testFrontier(redis, { hits: 1000, windowSec: 1, moderated: true });
    await fill(oneMs, 'b.com', 10);
    expect((await oneMs.leaseMany('link', 8, { now: T0 })).leases).toHaveLength(1);
    expect((await oneMs.leaseMany('link', 8, { now: T0 + 1 })).leases).toHaveLength(1);
  });
  test('moderated after a sliding-window log (QUEUE_MODERATED switched on a live frontier): the ms of its last fetch keeps only its room', async () => {
    // The sliding-window log holds fetches of several ms; a moderated lease counts only those of the last ms
    // (3 per ms at 3,003 per 1 s), and its hit keeps only that ms's fetches.
    const sliding = testFrontier(redis, { hits: 3003, windowSec: 1, moderated: false });
    await fill(sliding, 'a.com', 20);
    expect((await sliding.leaseMany('link', 2, { now: T0 })).leases).toHaveLength(2);
    expect((await sliding.leaseMany('link', 1, { now: T0 + 1 })).leases).toHaveLength(1);
    const key = partitionKeys(sliding.partitionFor('link')).throttle;
    // Fetch times are 13 digits each (T0 is), oldest first.
    expect(await redis.hget(key, 'a.com')).toBe(`${T0}${T0}${T0 + 1}`);
    const prefix = sliding.partitionFor('link').prefix;
    const moderated = testFrontier(redis, { prefix, hits: 3003, windowSec: 1, moderated: true });
    const r = await moderated.leaseMany('link', 8, { now: T0 + 1 });
    expect(r.leases).toHaveLength(2);
    expect(r.nextDueMs).toBe(T0 + 2);
    expect(await redis.hget(key, 'a.com')).toBe(String(T0 + 1).repeat(3));
    expect((await moderated.leaseMany('link', 8, { now: T0 + 2 })).leases).toHaveLength(3);
  });

  test('not moderated: a burst of 5 goes at once, then nothing until the 2 s window slides past the first', async () => {
    const frontier = testFrontier(redis, { ...FIVE_PER_2S, moderated: false });
    await fill(frontier, 'a.com', 100);
    const leases = await simulateLeasers(frontier, 'link', { leasers: 3, start: T0, durationMs: 10_000, stepMs: 50 });
    const times = leases.map((l) => l.at);
    expect(maxInWindow(times, 2000)).toBeLessThanOrEqual(5);
    expect(times.slice(0, 6)).toEqual([T0, T0, T0, T0 + 50, T0 + 50, T0 + 2000]);
    // Over 10 s the log lets exactly 5 through per 2 s.
    expect(times).toHaveLength(25);
  });

  test('a lease with nothing due says when the domain is next due', async () => {
    const frontier = testFrontier(redis, { ...FIVE_PER_2S, moderated: true });
    await fill(frontier, 'a.com', 3);
    expect((await leaseOne(frontier, 'link', { now: T0 })).leased).toBe(true);
    expect(await leaseOne(frontier, 'link', { now: T0 + 50 })).toEqual({
      leased: false,
      nextDueMs: T0 + 400,
      skipped: 0,
    });
    expect(await leaseOne(frontier, 'link', { now: T0 + 399 })).toEqual({
      leased: false,
      nextDueMs: T0 + 400,
      skipped: 0,
    });
    expect((await leaseOne(frontier, 'link', { now: T0 + 400 })).leased).toBe(true);

    const burst = testFrontier(redis, { ...FIVE_PER_2S, moderated: false });
    await fill(burst, 'a.com', 6);
    expect(await leaseAll(burst, 'link', T0)).toHaveLength(5);
    await fill(burst, 'b.com', 6, T0 + 700, 'link', 'c2');
    expect(await leaseAll(burst, 'link', T0 + 700)).toHaveLength(5);
    // The earliest of several waiting domains is reported: a.com at T0 + 2 s, not b.com at T0 + 2.7 s.
    expect(await leaseOne(burst, 'link', { now: T0 + 800 })).toEqual({
      leased: false,
      nextDueMs: T0 + 2000,
      skipped: 0,
    });
  });

  test('a domain-update override applies at the next lease, tightening or loosening, and domain-remove restores the default', async () => {
    const frontier = testFrontier(redis, { ...FIVE_PER_2S, moderated: true });
    await fill(frontier, 'a.com', 20);
    expect((await leaseOne(frontier, 'link', { now: T0 })).leased).toBe(true);

    await frontier.configureDomain('domain-update', 'a.com', { hits: 2, window: 2 }, T0 + 10);
    expect(await leaseOne(frontier, 'link', { now: T0 + 400 })).toEqual({
      leased: false,
      nextDueMs: T0 + 1000,
      skipped: 0,
    });
    expect((await leaseOne(frontier, 'link', { now: T0 + 1000 })).leased).toBe(true);

    await frontier.configureDomain('domain-update', 'a.com', { hits: 20, window: 2 }, T0 + 1010);
    expect((await leaseOne(frontier, 'link', { now: T0 + 1100 })).leased).toBe(true);
    expect(await leaseOne(frontier, 'link', { now: T0 + 1150 })).toEqual({
      leased: false,
      nextDueMs: T0 + 1200,
      skipped: 0,
    });

    await frontier.configureDomain('domain-remove', 'a.com', {}, T0 + 1160);
    expect(await leaseOne(frontier, 'link', { now: T0 + 1200 })).toEqual({
      leased: false,
      nextDueMs: T0 + 1500,
      skipped: 0,
    });
    expect((await leaseOne(frontier, 'link', { now: T0 + 1500 })).leased).toBe(true);
  });

  test('a tightened override counts from the last lease: 1 per 2 s after a lease at +400 ms is next due at +2400 ms', async () => {
    const frontier = testFrontier(redis, { ...FIVE_PER_2S, moderated: true });
    await fill(frontier, 'a.com', 5);
    expect((await leaseOne(frontier, 'link', { now: T0 })).leased).toBe(true);
    expect((await leaseOne(frontier, 'link', { now: T0 + 400 })).leased).toBe(true);
    await frontier.configureDomain('domain-update', 'a.com', { hits: 1, window: 2 }, T0 + 401);
    expect(await leaseOne(frontier, 'link', { now: T0 + 800 })).toEqual({
      leased: false,
      nextDueMs: T0 + 2400,
      skipped: 0,
    });
  });

  test('scale 0.5 halves the effective hits: 10 per 2 s at scale 0.5 is one lease every 400 ms', async () => {
    const frontier = testFrontier(redis, { hits: 10, windowSec: 2, moderated: true });
    await fill(frontier, 'a.com', 40);
    await fill(frontier, 'b.com', 40, T0, 'link', 'c2');
    await frontier.configureDomain('domain-update', 'a.com', { hits: 10, window: 2, scale: 0.5 }, T0);
    const leases = await simulateLeasers(frontier, 'link', { leasers: 3, start: T0, durationMs: 4000, stepMs: 50 });
    const a = leases.filter((l) => l.lease.domain === 'a.com').map((l) => l.at);
    const b = leases.filter((l) => l.lease.domain === 'b.com').map((l) => l.at);
    expect(a).toEqual(Array.from({ length: 10 }, (_, i) => T0 + i * 400));
    expect(b).toEqual(Array.from({ length: 20 }, (_, i) => T0 + i * 200));
  });

  test('a domain whose scaled hits round down to 0 is never leased and reports no due time', async () => {
    const frontier = testFrontier(redis, { ...FIVE_PER_2S, moderated: true });
    await fill(frontier, 'a.com', 3);
    await fill(frontier, 'b.com', 1, T0, 'link', 'c2');
    await frontier.configureDomain('domain-update', 'a.com', { hits: 1, window: 2, scale: 0.5 }, T0);
    expect((await leaseAll(frontier, 'link', T0)).map((l) => l.domain)).toEqual(['b.com']);
    expect(await leaseOne(frontier, 'link', { now: T0 + 1 })).toEqual({ leased: false, nextDueMs: null, skipped: 0 });
    await frontier.configureDomain('domain-update', 'a.com', { hits: 2, window: 2, scale: 0.5 }, T0 + 2);
    expect((await leaseAll(frontier, 'link', T0 + 3)).map((l) => l.domain)).toEqual(['a.com']);
    expect(await leaseOne(frontier, 'link', { now: T0 + 4 })).toEqual({
      leased: false,
      nextDueMs: T0 + 2003,
      skipped: 0,
    });
  });

  test('a blacklisted domain is never leased while other domains are, and is leased again after blacklist-remove', async () => {
    const frontier = testFrontier(redis);
    await fill(frontier, 'a.com', 5);
    await fill(frontier, 'b.com', 5, T0, 'link', 'c2');
    await frontier.configureDomain('blacklist-update', 'a.com', {}, T0);
    await fill(frontier, 'a.com', 1, T0, 'link', 'c3');
    const during = await leaseAll(frontier, 'link', T0 + 1);
    expect(during.map((l) => l.domain)).toEqual(['b.com', 'b.com', 'b.com', 'b.com', 'b.com']);
    // Its requests stay queued.
    expect(await frontier.backlog('link')).toEqual({ 'a.com': 6 });
    expect((await leaseOne(frontier, 'link', { now: T0 + 2 })).leased).toBe(false);

    await frontier.configureDomain('blacklist-remove', 'a.com', {}, T0 + 3);
    const after = await leaseAll(frontier, 'link', T0 + 4);
    expect(after.map((l) => l.url)).toEqual([
      'http://www.a.com/link/0',
      'http://www.a.com/link/1',
      'http://www.a.com/link/2',
      'http://www.a.com/link/3',
      'http://www.a.com/link/4',
      'http://www.a.com/link/0',
    ]);
    expect(after.map((l) => l.crawl.crawlid)).toEqual(['c1', 'c1', 'c1', 'c1', 'c1', 'c3']);
  });

  test('leases that find nothing record no throttle hit: a request enqueued after them is leased at once', async () => {
    const frontier = testFrontier(redis, { ...FIVE_PER_2S, moderated: true });
    await fill(frontier, 'a.com', 1);
    expect((await leaseOne(frontier, 'link', { now: T0 })).leased).toBe(true);
    const thr = partitionKeys(frontier.partitionFor('link')).throttle;
    const state = await redis.hgetall(thr);
    for (let t = T0 + 1; t <= T0 + 450; t += 10) {
      expect(await leaseOne(frontier, 'link', { now: t })).toEqual({ leased: false, nextDueMs: null, skipped: 0 });
    }
    expect(await redis.hgetall(thr)).toEqual(state);
    await fill(frontier, 'a.com', 1, T0 + 450, 'link', 'c2');
    expect((await leaseOne(frontier, 'link', { now: T0 + 450 })).leased).toBe(true);

    // The same on a frontier that never had work: the first request is leased at once.
    const empty = testFrontier(redis, { ...FIVE_PER_2S, moderated: true });
    for (let t = T0; t < T0 + 1000; t += 100) expect((await leaseOne(empty, 'link', { now: t })).leased).toBe(false);
    await fill(empty, 'a.com', 2, T0 + 1000);
    expect((await leaseOne(empty, 'link', { now: T0 + 1000 })).leased).toBe(true);
  });

  test('SCHEDULER_IP_ENABLED: two egress IPs each get the full per-domain limit', async () => {
    const frontier = testFrontier(redis, { ...FIVE_PER_2S, moderated: true, ipEnabled: true });
    await fill(frontier, 'a.com', 100);
    const ips = ['10.0.0.1', '10.0.0.2', '10.0.0.2'];
    const leases = await simulateLeasers(frontier, 'link', {
      leasers: 3,
      start: T0,
      durationMs: 4000,
      stepMs: 50,
      ips,
    });
    for (const ip of ['10.0.0.1', '10.0.0.2']) {
      const times = leases.filter((l) => ips[l.leaser] === ip).map((l) => l.at);
      expect(times, ip).toEqual(Array.from({ length: 10 }, (_, i) => T0 + i * 400));
    }
    expect(new Set(leases.map((l) => l.lease.handle)).size).toBe(20);
    // The IP's own throttle says when it is next due.
    expect(await leaseOne(frontier, 'link', { now: T0 + 3601, ip: '10.0.0.1' })).toEqual({
      leased: false,
      nextDueMs: T0 + 4000,
      skipped: 0,
    });
  });

  test('SCHEDULER_IP_ENABLED off: the same two egress IPs share one limit', async () => {
    const frontier = testFrontier(redis, { ...FIVE_PER_2S, moderated: true, ipEnabled: false });
    await fill(frontier, 'a.com', 100);
    const ips = ['10.0.0.1', '10.0.0.2', '10.0.0.2'];
    const leases = await simulateLeasers(frontier, 'link', {
      leasers: 3,
      start: T0,
      durationMs: 4000,
      stepMs: 50,
      ips,
    });
    expect(leases.map((l) => l.at)).toEqual(Array.from({ length: 10 }, (_, i) => T0 + i * 400));
  });

  test('SCHEDULER_TYPE_ENABLED=false: two spider types share one domain throttle', async () => {
    const shared = testFrontier(redis, { ...FIVE_PER_2S, moderated: true, typeEnabled: false });
    await fill(shared, 'a.com', 10, T0, 'link', 'c1');
    await fill(shared, 'a.com', 10, T0, 'wandering', 'c2');
    expect((await leaseOne(shared, 'link', { now: T0 })).leased).toBe(true);
    expect(await leaseOne(shared, 'wandering', { now: T0 })).toEqual({
      leased: false,
      nextDueMs: T0 + 400,
      skipped: 0,
    });
    expect((await leaseOne(shared, 'wandering', { now: T0 + 400 })).leased).toBe(true);
    expect(await leaseOne(shared, 'link', { now: T0 + 400 })).toEqual({
      leased: false,
      nextDueMs: T0 + 800,
      skipped: 0,
    });

    // With per-type throttles (the default) each spider type gets its own limit on the same domain.
    const perType = testFrontier(redis, { ...FIVE_PER_2S, moderated: true, typeEnabled: true });
    await fill(perType, 'a.com', 10, T0, 'link', 'c1');
    await fill(perType, 'a.com', 10, T0, 'wandering', 'c2');
    expect((await leaseOne(perType, 'link', { now: T0 })).leased).toBe(true);
    expect((await leaseOne(perType, 'wandering', { now: T0 })).leased).toBe(true);
  });
});

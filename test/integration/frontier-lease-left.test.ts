/**
 * What lease.lua says is left for its caller (its header's `left`; lib/frontier-model.ts LeaseLeft): more due
 * now only while a ready domain the caller may lease is left, and a distinct answer when the ready work is only in
 * the domains it excluded (the crawler's domains at their in-flight cap), so that it neither wakes workers for
 * nothing nor mistakes those domains for no work at all.
 */
import { describe, expect, test } from 'vitest';
import type { Frontier } from '../../lib/redis/frontier.ts';
import { frontierTestRedis, queueRequest, seedCrawl, T0, testFrontier } from '../helpers/frontier.ts';

const redis = frontierTestRedis();

/** One request per URL (priority 5), for crawl app/c1. */
async function queue(frontier: Frontier, urls: string[], now = T0) {
  const crawl = seedCrawl('app', 'c1');
  const outcomes = await frontier.enqueue(
    'link',
    urls.map((url) => ({ crawl, request: queueRequest(url, 5) })),
    now,
  );
  expect(outcomes.every((o) => o === 'queued')).toBe(true);
}

/** One fetch per domain per second. */
const ONE_A_SECOND = { hits: 1, windowSec: 1, moderated: false, throttleMarginMs: 0 };

describe('lease.lua: what is left once all wanted are leased', () => {
  test('the last due request: nothing else ready, so not "now" (no work at all, or the next throttle turn)', async () => {
    const frontier = testFrontier(redis, ONE_A_SECOND);
    await queue(frontier, ['http://a.com/1']);
    const last = await frontier.leaseMany('link', 1, { now: T0 });
    expect(last.leases.map((l) => l.url)).toEqual(['http://a.com/1']);
    expect(last).toMatchObject({ nextDueMs: null, left: 'none' });

    // Its domain's next request waits for the throttle: due then, not now.
    await queue(frontier, ['http://b.com/1', 'http://b.com/2'], T0 + 10);
    const first = await frontier.leaseMany('link', 1, { now: T0 + 10 });
    expect(first.leases.map((l) => l.url)).toEqual(['http://b.com/1']);
    expect(first).toMatchObject({ nextDueMs: T0 + 1010, left: 'none' });
  });

  test('another domain the caller does not exclude is ready: "now", more', async () => {
    const frontier = testFrontier(redis, ONE_A_SECOND);
    await queue(frontier, ['http://a.com/1', 'http://b.com/1']);
    const r = await frontier.leaseMany('link', 1, { now: T0, exclude: ['x.com'] });
    expect(r.leases).toHaveLength(1);
    expect(r).toMatchObject({ nextDueMs: T0, left: 'more' });
  });

  test('more of the domain just leased from is ready: "now", but only in a domain this call leased from', async () => {
    const frontier = testFrontier(redis);
    await queue(frontier, ['http://a.com/1', 'http://a.com/2']);
    const r = await frontier.leaseMany('link', 1, { now: T0 });
    expect(r.leases.map((l) => l.url)).toEqual(['http://a.com/1']);
    expect(r).toMatchObject({ nextDueMs: T0, left: 'leased' });
  });

  test('only excluded domains are ready: "excluded", not "now"', async () => {
    const frontier = testFrontier(redis);
    await queue(frontier, ['http://a.com/1', 'http://a.com/2', 'http://b.com/1']);
    const r = await frontier.leaseMany('link', 1, { now: T0, exclude: ['a.com'] });
    expect(r.leases.map((l) => l.url)).toEqual(['http://b.com/1']);
    expect(r).toMatchObject({ nextDueMs: null, left: 'excluded' });
  });
});

describe('lease.lua: nothing leased', () => {
  test('only excluded domains are ready: "excluded" with no due time, and they stay ready for others', async () => {
    const frontier = testFrontier(redis);
    await queue(frontier, ['http://a.com/1', 'http://b.com/1']);
    const r = await frontier.leaseMany('link', 4, { now: T0, exclude: ['a.com', 'b.com'] });
    expect(r).toEqual({ leases: [], nextDueMs: null, left: 'excluded', skipped: 0 });
    expect((await frontier.leaseMany('link', 4, { now: T0 })).leases).toHaveLength(2);
  });

  test('excluded domains ready and another domain waiting for its throttle: "excluded", due at its turn', async () => {
    const frontier = testFrontier(redis, ONE_A_SECOND);
    await queue(frontier, ['http://c.com/1', 'http://c.com/2']);
    expect((await frontier.leaseMany('link', 1, { now: T0 })).leases).toHaveLength(1);
    await queue(frontier, ['http://a.com/1'], T0 + 10);
    const r = await frontier.leaseMany('link', 4, { now: T0 + 20, exclude: ['a.com'] });
    expect(r).toEqual({ leases: [], nextDueMs: T0 + 1000, left: 'excluded', skipped: 0 });
    // Once c.com's turn comes it is leased; a.com is still ready for whoever does not exclude it.
    const later = await frontier.leaseMany('link', 4, { now: T0 + 1000, exclude: ['a.com'] });
    expect(later.leases.map((l) => l.url)).toEqual(['http://c.com/2']);
    expect(later.left).toBe('excluded');
  });

  test('with IP-scoped throttles too', async () => {
    const frontier = testFrontier(redis, { ipEnabled: true });
    await queue(frontier, ['http://a.com/1', 'http://a.com/2']);
    const r = await frontier.leaseMany('link', 4, { now: T0, ip: '10.0.0.1', exclude: ['a.com'] });
    expect(r).toEqual({ leases: [], nextDueMs: null, left: 'excluded', skipped: 0 });
    const one = await frontier.leaseMany('link', 1, { now: T0, ip: '10.0.0.1' });
    expect(one.leases.map((l) => l.url)).toEqual(['http://a.com/1']);
    expect(one).toMatchObject({ nextDueMs: T0, left: 'leased' });
  });
});

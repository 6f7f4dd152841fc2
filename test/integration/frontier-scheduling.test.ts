import { describe, expect, test } from 'vitest';
import type { CrawlRef, QueueRequest } from '../../lib/frontier-model.ts';
import { prng } from '../../localstack/site/prng.ts';
import {
  childCrawl,
  frontierTestRedis,
  leaseAll,
  leaseOne,
  queueRequest,
  seedCrawl,
  T0,
  testFrontier,
} from '../helpers/frontier.ts';

const redis = frontierTestRedis();

describe('frontier scheduling', () => {
  test('1,000 requests over 20 domains are leased by priority (high first), then in enqueue order', async () => {
    const frontier = testFrontier(redis);
    const random = prng(20260302);
    const priorities = [100, 60, 60, 30, 5, 1, 1, 1, -9, -19];
    const crawls = [seedCrawl('app', 'c1'), seedCrawl('app', 'c2'), seedCrawl('other', 'c1')];
    const items: { crawl: CrawlRef; request: QueueRequest }[] = [];
    for (let i = 0; i < 1000; i++) {
      const domain = `site${Math.floor(random() * 20)}.com`;
      const priority = priorities[Math.floor(random() * priorities.length)] as number;
      const crawl = crawls[i % crawls.length] as CrawlRef;
      // Every request of a crawl but its first is a child: the crawl is already registered.
      const ref = i < crawls.length ? crawl : childCrawl(crawl);
      items.push({ crawl: ref, request: queueRequest(`http://www.${domain}/page/${i}`, priority, 1) });
    }
    expect(new Set(items.map((i) => i.request.domain)).size).toBe(20);
    // Batches arrive one after another, as consecutive Kafka batches would.
    for (let b = 0; b < items.length; b += 100) {
      const outcomes = await frontier.enqueue('link', items.slice(b, b + 100), T0);
      expect(outcomes.every((o) => o === 'queued')).toBe(true);
    }

    const leases = await leaseAll(frontier, 'link', T0);

    // Array.prototype.sort is stable: equal priorities keep enqueue order.
    const expected = [...items].sort((a, b) => b.request.priority - a.request.priority);
    expect(leases.map((l) => l.url)).toEqual(expected.map((i) => i.request.url));
    expect(leases.map((l) => [l.domain, l.priority, l.depth, l.retries])).toEqual(
      expected.map((i) => [i.request.domain, i.request.priority, 1, 0]),
    );
    expect(leases.map((l) => `${l.crawl.appid}/${l.crawl.crawlid}`)).toEqual(
      expected.map((i) => `${i.crawl.appid}/${i.crawl.crawlid}`),
    );
    expect(await leaseOne(frontier, 'link', { now: T0 })).toEqual({ leased: false, nextDueMs: null, skipped: 0 });
  });

  test('a request enqueued later at a higher priority is leased before everything queued earlier', async () => {
    const frontier = testFrontier(redis);
    const crawl = seedCrawl('app', 'c1');
    await frontier.enqueue(
      'link',
      [1, 2, 3].map((n) => ({ crawl, request: queueRequest(`http://a.com/${n}`, 50) })),
      T0,
    );
    const [first] = await leaseAll(frontier, 'link', T0, { max: 1 });
    await frontier.enqueue('link', [{ crawl, request: queueRequest('http://b.com/late', 51) }], T0 + 1);
    await frontier.enqueue('link', [{ crawl, request: queueRequest('http://a.com/later', 51) }], T0 + 2);
    const rest = await leaseAll(frontier, 'link', T0 + 3);
    expect([first, ...rest].map((l) => l?.url)).toEqual([
      'http://a.com/1',
      'http://b.com/late',
      'http://a.com/later',
      'http://a.com/2',
      'http://a.com/3',
    ]);
  });

  test('while the best domain waits on its throttle, the best request of the other domains is leased', async () => {
    const frontier = testFrontier(redis, { hits: 1, windowSec: 10, moderated: true });
    const crawl = seedCrawl('app', 'c1');
    await frontier.enqueue(
      'link',
      [
        { crawl, request: queueRequest('http://a.com/1', 90) },
        { crawl, request: queueRequest('http://a.com/2', 90) },
        { crawl, request: queueRequest('http://b.com/1', 10) },
        { crawl, request: queueRequest('http://c.com/1', 20) },
      ],
      T0,
    );
    const now = await leaseAll(frontier, 'link', T0);
    expect(now.map((l) => l.url)).toEqual(['http://a.com/1', 'http://c.com/1', 'http://b.com/1']);
    expect(await leaseOne(frontier, 'link', { now: T0 + 1 })).toEqual({
      leased: false,
      nextDueMs: T0 + 10_000,
      skipped: 0,
    });
    expect((await leaseAll(frontier, 'link', T0 + 10_000)).map((l) => l.url)).toEqual(['http://a.com/2']);
  });

  test('new requests for an idle, a waiting and a blacklisted domain are scheduled right', async () => {
    const frontier = testFrontier(redis, { hits: 1, windowSec: 10, moderated: true });
    const crawl = seedCrawl('app', 'c1');
    const one = (url: string, priority: number, now: number) =>
      frontier.enqueue('link', [{ crawl: childCrawl(crawl), request: queueRequest(url, priority) }], now);
    await frontier.enqueue('link', [{ crawl, request: queueRequest('http://a.com/1', 50) }], T0);
    expect((await leaseAll(frontier, 'link', T0)).map((l) => l.url)).toEqual(['http://a.com/1']);
    // a.com is idle (no work) and throttled: its next request waits for the throttle...
    await one('http://a.com/2', 50, T0 + 1);
    // ...and a better one arriving meanwhile is the first leased when it allows.
    await one('http://a.com/3', 90, T0 + 2);
    expect(await leaseOne(frontier, 'link', { now: T0 + 3 })).toEqual({
      leased: false,
      nextDueMs: T0 + 10_000,
      skipped: 0,
    });
    expect((await leaseAll(frontier, 'link', T0 + 10_000)).map((l) => l.url)).toEqual(['http://a.com/3']);
    expect((await leaseAll(frontier, 'link', T0 + 20_000)).map((l) => l.url)).toEqual(['http://a.com/2']);

    await frontier.configureDomain('blacklist-update', 'z.com', {}, T0 + 20_001);
    await one('http://z.com/1', 99, T0 + 20_002);
    expect(await leaseAll(frontier, 'link', T0 + 20_003)).toEqual([]);
    await frontier.configureDomain('blacklist-remove', 'z.com', {}, T0 + 20_004);
    expect((await leaseAll(frontier, 'link', T0 + 20_005)).map((l) => l.url)).toEqual(['http://z.com/1']);
  });

  test('each spider type has its own queue: a lease for one type never returns another type’s request', async () => {
    const frontier = testFrontier(redis);
    const crawl = seedCrawl('app', 'c1');
    await frontier.enqueue('link', [{ crawl, request: queueRequest('http://a.com/link', 1) }], T0);
    await frontier.enqueue(
      'wandering',
      [{ crawl: seedCrawl('app', 'w1', { spiderid: 'wandering' }), request: queueRequest('http://a.com/w', 99) }],
      T0,
    );
    expect((await leaseAll(frontier, 'link', T0)).map((l) => l.url)).toEqual(['http://a.com/link']);
    expect((await leaseAll(frontier, 'wandering', T0)).map((l) => l.url)).toEqual(['http://a.com/w']);
    expect(await frontier.spiders()).toEqual(['link', 'wandering']);
  });
});

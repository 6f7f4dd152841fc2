import { describe, expect, test } from 'vitest';
import type { CrawlRef, Lease, QueueRequest } from '../../lib/frontier-model.ts';
import type { Frontier } from '../../lib/redis/frontier.ts';
import { crawlKey, partitionKeys } from '../../lib/redis/keys.ts';
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

const T0S = T0 / 1000;

type Item = { crawl: CrawlRef; request: QueueRequest };

/** Items of one crawl: the first is its seed, the rest children. */
function crawlItems(crawl: CrawlRef, requests: QueueRequest[]): Item[] {
  return requests.map((request, i) => ({ crawl: i === 0 ? crawl : childCrawl(crawl), request }));
}

/** Leases until nothing is due at `now`, also counting the requests of stopped crawls dropped on the way. */
async function drain(frontier: Frontier, now: number): Promise<{ leases: Lease[]; skipped: number }> {
  const leases: Lease[] = [];
  let skipped = 0;
  for (;;) {
    const r = await leaseOne(frontier, 'link', { now });
    skipped += r.skipped;
    if (!r.leased) return { leases, skipped };
    leases.push(r.lease);
  }
}

describe('stop', () => {
  test('stop purges exactly what the crawl had queued (delayed retries included) and leaves other crawls alone', async () => {
    const frontier = testFrontier(redis);
    const a = seedCrawl('app', 'a');
    const b = seedCrawl('app', 'b');
    const aUrls = ['x.com/1', 'x.com/2', 'x.com/3', 'x.com/4', 'y.com/1', 'y.com/2', 'y.com/3', 'z.com/1'];
    const bUrls = ['x.com/1', 'x.com/2', 'x.com/3', 'y.com/1', 'y.com/2', 'z.com/1', 'z.com/2'];
    await frontier.enqueue(
      'link',
      crawlItems(
        a,
        aUrls.map((u) => queueRequest(`http://${u}`, 10)),
      ),
      T0,
    );
    await frontier.enqueue(
      'link',
      crawlItems(
        b,
        bUrls.map((u) => queueRequest(`http://${u}`, 1)),
      ),
      T0,
    );
    const [ax1, ax2, ax3] = await leaseAll(frontier, 'link', T0, { max: 3 });
    expect([ax1, ax2, ax3].map((l) => `${l?.crawl.crawlid} ${l?.url}`)).toEqual([
      'a http://x.com/1',
      'a http://x.com/2',
      'a http://x.com/3',
    ]);
    await frontier.retry(ax2 as Lease, 10_000, T0 + 1);
    const bBefore = await frontier.crawlInfo('link', 'app', 'b', T0 + 2);

    const stopped = await frontier.stop('link', 'app', 'a', T0 + 2);

    // 5 queued + 1 delayed retry; the 2 still leased are not "pending".
    expect(stopped.purged).toBe(6);
    expect(stopped.settings).toMatchObject({ appid: 'app', crawlid: 'a' });
    expect(await frontier.crawlInfo('link', 'app', 'a', T0 + 3)).toBeUndefined();
    expect(await frontier.crawlInfo('link', 'app', 'b', T0 + 3)).toEqual(bBefore);
    expect(Object.keys(await frontier.appInfo('link', 'app', T0 + 3))).toEqual(['b']);
    expect(await frontier.backlog('link')).toEqual({ 'x.com': 3, 'y.com': 2, 'z.com': 2 });

    // Leases of the stopped crawl settle to nothing.
    expect(await frontier.ack(ax1 as Lease, 'done', T0 + 4)).toMatchObject({ acked: false, complete: false });
    expect(await frontier.release([ax3 as Lease], T0 + 4)).toBe(0);

    // Nothing of the stopped crawl is leased, not even its retry once due; each purged request is dropped once.
    const { leases, skipped } = await drain(frontier, T0 + 20_000);
    expect(leases.map((l) => `${l.crawl.crawlid} ${l.url}`)).toEqual(bUrls.map((u) => `b http://${u}`));
    expect(skipped).toBe(6);
    const keys = partitionKeys(frontier.partitionFor('link'));
    expect(await redis.zcard(keys.queue)).toBe(0);
    expect(await redis.zcard(keys.delayed)).toBe(0);
    expect(await redis.zcard(keys.leases)).toBe(7);
  });

  test('a stopped crawl refuses later seeds and children, until the stop has lapsed', async () => {
    const frontier = testFrontier(redis, { stopTtlMs: 60_000 });
    const a = seedCrawl('app', 'a');
    await frontier.enqueue('link', crawlItems(a, [queueRequest('http://x.com/1')]), T0);
    expect((await frontier.stop('link', 'app', 'a', T0 + 1)).purged).toBe(1);

    const late = [
      { crawl: a, request: queueRequest('http://x.com/1') },
      { crawl: a, request: queueRequest('http://x.com/new') },
      { crawl: childCrawl(a), request: queueRequest('http://x.com/child', -9, 1) },
    ];
    expect(await frontier.enqueue('link', late, T0 + 2)).toEqual(['stopped', 'stopped', 'stopped']);
    expect(await frontier.enqueue('link', late, T0 + 60_000)).toEqual(['stopped', 'stopped', 'stopped']);
    expect(await leaseAll(frontier, 'link', T0 + 60_000)).toEqual([]);

    // Past the stop, the crawlid starts over: a fresh crawl with an empty dupefilter.
    expect(await frontier.enqueue('link', late, T0 + 60_001)).toEqual(['queued', 'queued', 'queued']);
    expect((await frontier.crawlInfo('link', 'app', 'a', T0 + 60_002))?.queued).toBe(3);
  });

  test('stopping a crawl that was never queued purges nothing and still refuses its requests', async () => {
    const frontier = testFrontier(redis);
    await frontier.enqueue('link', crawlItems(seedCrawl('app', 'b'), [queueRequest('http://x.com/1')]), T0);
    expect(await frontier.stop('link', 'app', 'never', T0)).toEqual({ purged: 0, settings: undefined });
    expect(
      await frontier.enqueue(
        'link',
        [{ crawl: seedCrawl('app', 'never'), request: queueRequest('http://x.com/1') }],
        T0,
      ),
    ).toEqual(['stopped']);
  });

  test('a lease that spends its work bound skipping purged requests reports work due now, not the next throttle', async () => {
    const frontier = testFrontier(redis, { hits: 1, windowSec: 10, moderated: true, bound: 5 });
    const a = seedCrawl('app', 'a');
    const b = seedCrawl('app', 'b');
    await frontier.enqueue(
      'link',
      crawlItems(
        a,
        Array.from({ length: 10 }, (_, i) => queueRequest(`http://x.com/a${i}`, 50)),
      ),
      T0,
    );
    await frontier.enqueue(
      'link',
      crawlItems(b, [
        queueRequest('http://y.com/1', 100),
        queueRequest('http://y.com/2', 100),
        queueRequest('http://x.com/b', 1),
      ]),
      T0,
    );
    const first = await leaseOne(frontier, 'link', { now: T0 });
    expect(first.leased && first.lease.url).toBe('http://y.com/1');
    expect((await frontier.stop('link', 'app', 'a', T0)).purged).toBe(10);

    expect(await leaseOne(frontier, 'link', { now: T0 })).toEqual({ leased: false, nextDueMs: T0, skipped: 5 });
    expect(await leaseOne(frontier, 'link', { now: T0 })).toEqual({ leased: false, nextDueMs: T0, skipped: 5 });
    const third = await leaseOne(frontier, 'link', { now: T0 });
    expect(third.leased && [third.lease.url, third.skipped]).toEqual(['http://x.com/b', 0]);
    expect(await leaseOne(frontier, 'link', { now: T0 })).toEqual({
      leased: false,
      nextDueMs: T0 + 10_000,
      skipped: 0,
    });
  });
});

describe('stop settles in the background', () => {
  test('a crawl over 6,000 domains: stop answers at once, the backlog is exact, counters go in bounded chunks', async () => {
    const frontier = testFrontier(redis);
    const keys = partitionKeys(frontier.partitionFor('link'));
    const big = seedCrawl('app', 'big');
    const other = seedCrawl('app', 'other');
    for (let b = 0; b < 6000; b += 1000) {
      const urls = Array.from({ length: 1000 }, (_, i) => queueRequest(`http://d${b + i}.com/`, (b + i) % 2));
      await frontier.enqueue('link', crawlItems(b === 0 ? big : childCrawl(big), urls), T0);
    }
    await frontier.enqueue('link', crawlItems(other, [queueRequest('http://d1.com/other')]), T0);
    const bigRef = await redis.hget(keys.crawlRefs, crawlKey('app', 'big', 'link'));
    expect(await redis.zcount(keys.crawlIndex, '-inf', '+inf')).toBe(6001);

    expect((await frontier.stop('link', 'app', 'big', T0 + 1)).purged).toBe(6000);
    // Settled lazily: the counters are still there, the ref waits in K.finished at score 0.
    expect(await redis.zscore(keys.finished, bigRef as string)).toBe('0');
    expect(await redis.zcard(keys.crawlIndex)).toBe(6001);
    // A backlog read settles first (over more than one bounded call), so it is exact.
    expect(await frontier.backlog('link')).toEqual({ 'd1.com': 1 });
    expect(await redis.zcard(keys.crawlIndex)).toBe(1);
    expect(await redis.zcard(keys.finished)).toBe(0);
    expect((await frontier.crawlInfo('link', 'app', 'other', T0 + 2))?.queued).toBe(1);
  });
});

describe('expiry', () => {
  test('dueCrawls lists exactly the crawls whose expires has passed, not future ones and not expires=0', async () => {
    const frontier = testFrontier(redis);
    const crawls = [
      seedCrawl('app', 'e10', { expires: T0S + 10 }),
      seedCrawl('app', 'e20', { expires: T0S + 20 }),
      seedCrawl('app', 'never', { expires: 0 }),
      seedCrawl('other', 'o10', { expires: T0S + 10 }),
    ];
    for (const crawl of crawls) await frontier.enqueue('link', crawlItems(crawl, [queueRequest('http://x.com/')]), T0);
    const due = async (now: number) => (await frontier.dueCrawls('link', now)).map((s) => s.crawlid).sort();

    expect(await due(T0 + 9_999)).toEqual([]);
    expect(await due(T0 + 10_000)).toEqual(['e10', 'o10']);
    expect(await due(T0 + 19_999)).toEqual(['e10', 'o10']);
    expect(await due(T0 + 20_000)).toEqual(['e10', 'e20', 'o10']);
    expect(await frontier.dueCrawls('link', T0 + 20_000, 1)).toHaveLength(1);
    expect((await frontier.dueCrawls('link', T0 + 20_000))[0]).toMatchObject({ appid: 'app', expires: T0S + 10 });

    // Expiring is stopping: a stopped crawl leaves the index.
    expect((await frontier.stop('link', 'app', 'e10', T0 + 20_000)).purged).toBe(1);
    expect(await due(T0 + 1_000_000)).toEqual(['e20', 'o10']);
  });

  test('enqueueing for a crawl whose expires has passed answers expired, seed or child', async () => {
    const frontier = testFrontier(redis);
    const past = seedCrawl('app', 'past', { expires: T0S - 1 });
    expect(await frontier.enqueue('link', crawlItems(past, [queueRequest('http://x.com/')]), T0)).toEqual(['expired']);
    expect(await frontier.crawlInfo('link', 'app', 'past', T0)).toBeUndefined();

    const soon = seedCrawl('app', 'soon', { expires: T0S + 20 });
    await frontier.enqueue('link', crawlItems(soon, [queueRequest('http://x.com/')]), T0);
    const more = [
      { crawl: soon, request: queueRequest('http://x.com/seed2') },
      { crawl: childCrawl(soon), request: queueRequest('http://x.com/child', -9, 1) },
    ];
    expect(await frontier.enqueue('link', more, T0 + 20_000)).toEqual(['expired', 'expired']);
    expect(await frontier.enqueue('link', more, T0 + 19_999)).toEqual(['queued', 'queued']);
  });
});

describe('info', () => {
  test('crawl info counts what was enqueued minus what was leased, per domain and priority', async () => {
    const frontier = testFrontier(redis);
    const crawl = seedCrawl('app', 'c1', { priority: 5, attrs: { k: 'v' } });
    await frontier.enqueue(
      'link',
      crawlItems(crawl, [
        queueRequest('http://x.com/1', 5),
        queueRequest('http://x.com/2', 5),
        queueRequest('http://x.com/3', 5),
        queueRequest('http://y.com/1', 5),
        queueRequest('http://x.com/c1', -5, 1),
        queueRequest('http://x.com/c2', -5, 1),
        queueRequest('http://z.com/c1', -5, 1),
        queueRequest('http://z.com/cc1', -15, 2),
      ]),
      T0,
    );
    const [x1, x2] = await leaseAll(frontier, 'link', T0, { max: 2 });
    expect([x1?.url, x2?.url]).toEqual(['http://x.com/1', 'http://x.com/2']);
    await frontier.ack(x1 as Lease, 'done', T0 + 1);

    expect(await frontier.crawlInfo('link', 'app', 'c1', T0 + 2)).toEqual({
      settings: crawl.settings,
      queued: 6,
      leased: 1,
      done: 1,
      failed: 0,
      domains: {
        'x.com': { priorities: { 5: 1, [-5]: 2 }, total: 3 },
        'y.com': { priorities: { 5: 1 }, total: 1 },
        'z.com': { priorities: { [-5]: 1, [-15]: 1 }, total: 2 },
      },
    });

    // A retry moves its request to priority - 10 in the counts; a domain that empties disappears.
    await frontier.retry(x2 as Lease, 1000, T0 + 3);
    const [x3] = await leaseAll(frontier, 'link', T0 + 3, { max: 1 });
    expect(x3?.url).toBe('http://x.com/3');
    const info = await frontier.crawlInfo('link', 'app', 'c1', T0 + 4);
    expect(info?.domains).toEqual({
      'x.com': { priorities: { [-5]: 3 }, total: 3 },
      'y.com': { priorities: { 5: 1 }, total: 1 },
      'z.com': { priorities: { [-5]: 1, [-15]: 1 }, total: 2 },
    });
    expect([info?.queued, info?.leased]).toEqual([6, 1]);
  });

  test('app info lists every crawl of the app and no other app, even one whose name starts the same', async () => {
    const frontier = testFrontier(redis);
    const items = [
      ...crawlItems(seedCrawl('app', 'c1'), [queueRequest('http://x.com/1', 3), queueRequest('http://y.com/1', -7, 1)]),
      ...crawlItems(seedCrawl('app', 'c2'), [queueRequest('http://x.com/1', 9)]),
      ...crawlItems(seedCrawl('app2', 'c3'), [queueRequest('http://x.com/1', 9)]),
      ...crawlItems(seedCrawl('ap', 'c4'), [queueRequest('http://x.com/1', 9)]),
    ];
    expect(await frontier.enqueue('link', items, T0)).toEqual(Array(5).fill('queued'));
    await frontier.enqueue(
      'wandering',
      crawlItems(seedCrawl('app', 'w1', { spiderid: 'wandering' }), [queueRequest('http://x.com/1')]),
      T0,
    );

    const apps = await frontier.appInfo('link', 'app', T0);
    expect(Object.keys(apps).sort()).toEqual(['c1', 'c2']);
    expect(apps.c1?.domains).toEqual({
      'x.com': { priorities: { 3: 1 }, total: 1 },
      'y.com': { priorities: { [-7]: 1 }, total: 1 },
    });
    expect(apps.c1?.queued).toBe(2);
    expect(apps.c2?.domains).toEqual({ 'x.com': { priorities: { 9: 1 }, total: 1 } });
    expect(Object.keys(await frontier.appInfo('link', 'app2', T0))).toEqual(['c3']);
    expect(Object.keys(await frontier.appInfo('wandering', 'app', T0))).toEqual(['w1']);
    expect(await frontier.appInfo('link', 'nobody', T0)).toEqual({});
    expect(await frontier.crawlInfo('link', 'app', 'nothing', T0)).toBeUndefined();
  });
});

describe('redelivery and page caps', () => {
  test('enqueueing the same batch twice: the second time everything is duplicate and info is unchanged', async () => {
    const frontier = testFrontier(redis);
    const c1 = seedCrawl('app', 'c1');
    const c2 = seedCrawl('app', 'c2');
    const batch = [
      ...crawlItems(c1, [queueRequest('http://a.com/'), queueRequest('http://a.com/1', -9, 1)]),
      { crawl: childCrawl(c1), request: queueRequest('http://b.com/2', -9, 1) },
      ...crawlItems(c2, [queueRequest('http://a.com/'), queueRequest('http://c.com/3', -9, 1)]),
    ];
    expect(await frontier.enqueue('link', batch, T0)).toEqual(Array(5).fill('queued'));
    const info = await frontier.appInfo('link', 'app', T0);
    const backlog = await frontier.backlog('link');

    expect(await frontier.enqueue('link', batch, T0 + 1)).toEqual(Array(5).fill('duplicate'));
    expect(await frontier.appInfo('link', 'app', T0 + 1)).toEqual(info);
    expect(await frontier.backlog('link')).toEqual(backlog);
    // Still duplicates after they were leased and acked.
    for (const l of await leaseAll(frontier, 'link', T0 + 2)) await frontier.ack(l, 'done', T0 + 2);
    expect(await frontier.enqueue('link', batch, T0 + 3)).toEqual(Array(5).fill('duplicate'));
    expect(await leaseAll(frontier, 'link', T0 + 3)).toEqual([]);
  });

  test('a child ahead of its seed in one batch is queued, the seed registering the crawl; a child of an unknown crawl is refused', async () => {
    const frontier = testFrontier(redis);
    const c1 = seedCrawl('app', 'c1', { attrs: { from: 'seed' } });
    const batch = [
      { crawl: childCrawl(c1), request: queueRequest('http://a.com/child', -9, 1) },
      { crawl: c1, request: queueRequest('http://a.com/') },
      { crawl: childCrawl(seedCrawl('app', 'ghost')), request: queueRequest('http://a.com/x', -9, 1) },
    ];
    expect(await frontier.enqueue('link', batch, T0)).toEqual(['queued', 'queued', 'unknown_crawl']);
    expect((await frontier.crawlInfo('link', 'app', 'c1', T0))?.settings).toEqual(c1.settings);
  });

  test('domain_max_pages=4: the 5th request of that domain is capped, other domains and crawls are not', async () => {
    const frontier = testFrontier(redis);
    const capped = seedCrawl('app', 'capped', { domain_max_pages: 4 });
    const free = seedCrawl('app', 'free');
    const a = (n: number) => queueRequest(`http://a.com/${n}`);
    const outcomes = await frontier.enqueue(
      'link',
      [
        ...crawlItems(capped, [a(1), a(2), a(3), a(4), a(5), queueRequest('http://b.com/1')]),
        ...crawlItems(free, [a(1), a(2), a(3), a(4), a(5), a(6)]),
        ...crawlItems(childCrawl(capped), [a(6), queueRequest('http://b.com/2'), queueRequest('http://b.com/3')]),
      ],
      T0,
    );
    expect(outcomes).toEqual([
      ...['queued', 'queued', 'queued', 'queued', 'capped', 'queued'],
      ...Array(6).fill('queued'),
      ...['capped', 'queued', 'queued'],
    ]);
    expect((await frontier.crawlInfo('link', 'app', 'capped', T0))?.domains).toEqual({
      'a.com': { priorities: { 1: 4 }, total: 4 },
      'b.com': { priorities: { 1: 3 }, total: 3 },
    });

    // The cap counts pages ever queued, not pages waiting: leasing them frees no room.
    for (const l of await leaseAll(frontier, 'link', T0 + 1)) await frontier.ack(l, 'done', T0 + 1);
    expect(
      await frontier.enqueue('link', [{ crawl: childCrawl(capped), request: queueRequest('http://a.com/7') }], T0 + 2),
    ).toEqual(['capped']);
  });

  test('redelivering a batch that hit a page cap: what was queued is duplicate, what was capped is capped again', async () => {
    const frontier = testFrontier(redis);
    const capped = seedCrawl('app', 'capped', { domain_max_pages: 2 });
    const batch = crawlItems(
      capped,
      [1, 2, 3].map((n) => queueRequest(`http://a.com/${n}`)),
    );
    expect(await frontier.enqueue('link', batch, T0)).toEqual(['queued', 'queued', 'capped']);
    expect(await frontier.enqueue('link', batch, T0 + 1)).toEqual(['duplicate', 'duplicate', 'capped']);
  });
});

describe('finished crawls', () => {
  const TTL_MS = 600_000;

  /** Queues `urls` for `crawl` at `now`, leases and acks them all; returns the acks. */
  async function crawlToCompletion(frontier: Frontier, crawl: CrawlRef, urls: string[], now: number) {
    await frontier.enqueue(
      'link',
      crawlItems(
        crawl,
        urls.map((u) => queueRequest(u)),
      ),
      now,
    );
    const acks = [];
    for (const l of await leaseAll(frontier, 'link', now)) acks.push(await frontier.ack(l, 'done', now));
    return acks;
  }

  test('a completed crawl keeps its records for the dupefilter TTL, then sweepFinished drops every one of them', async () => {
    const frontier = testFrontier(redis, { dupefilterTtlSec: TTL_MS / 1000 });
    const done = seedCrawl('app', 'done', { domain_max_pages: 5, expires: T0S + 86_400 });
    const open = seedCrawl('app', 'open');
    const acks = await crawlToCompletion(frontier, done, ['http://x.com/1', 'http://y.com/1'], T0);
    expect(acks.map((a) => a.complete)).toEqual([false, true]);
    await frontier.enqueue('link', crawlItems(open, [queueRequest('http://x.com/2')]), T0);

    expect(await frontier.sweepFinished('link', T0 + TTL_MS - 1)).toBe(0);
    expect((await frontier.crawlInfo('link', 'app', 'done', T0 + TTL_MS - 1))?.done).toBe(2);
    expect(await frontier.sweepFinished('link', T0 + TTL_MS)).toBe(1);
    expect(await frontier.sweepFinished('link', T0 + TTL_MS + 1)).toBe(0);

    expect(await frontier.crawlInfo('link', 'app', 'done', T0 + TTL_MS + 1)).toBeUndefined();
    expect(Object.keys(await frontier.appInfo('link', 'app', T0 + TTL_MS + 1))).toEqual(['open']);
    expect(await frontier.dueCrawls('link', T0 + 2 * 86_400_000)).toEqual([]);
    // Nothing of the swept crawl is left in the partition: only the open crawl's records remain.
    const keys = partitionKeys(frontier.partitionFor('link'));
    const ref = (await redis.hget(keys.crawlRefs, crawlKey('app', 'open', 'link'))) as string;
    expect(await redis.hkeys(keys.crawlRefs)).toEqual(expect.arrayContaining(['#', crawlKey('app', 'open', 'link')]));
    expect(await redis.hlen(keys.crawlRefs)).toBe(2);
    expect(await redis.hkeys(keys.crawlSettings)).toEqual([ref]);
    expect((await redis.hkeys(keys.counts)).every((f) => f.startsWith(`${ref}\0`))).toBe(true);
    expect((await redis.zrange(keys.crawlIndex, '0', '-1')).every((m) => m.startsWith(`${ref}\0`))).toBe(true);
    expect(await redis.zcard(keys.appIndex)).toBe(1);
    expect(await redis.zcard(keys.expiry)).toBe(0);
    expect(await redis.zcard(keys.finished)).toBe(0);

    // Afterwards the crawl is unknown: a late child is refused, a new seed starts it afresh (empty dupefilter).
    const late = { crawl: childCrawl(done), request: queueRequest('http://x.com/late', -9, 1) };
    expect(await frontier.enqueue('link', [late], T0 + TTL_MS + 2)).toEqual(['unknown_crawl']);
    const again = [{ crawl: done, request: queueRequest('http://x.com/1') }];
    expect(await frontier.enqueue('link', again, T0 + TTL_MS + 3)).toEqual(['queued']);
    expect((await frontier.crawlInfo('link', 'app', 'done', T0 + TTL_MS + 3))?.done).toBe(0);
  });

  test('new work for a completed crawl takes it out of the finished set; completing again schedules a new sweep', async () => {
    const frontier = testFrontier(redis, { dupefilterTtlSec: TTL_MS / 1000 });
    const crawl = seedCrawl('app', 'c1');
    await crawlToCompletion(frontier, crawl, ['http://x.com/1'], T0);
    const finished = partitionKeys(frontier.partitionFor('link')).finished;
    expect(await redis.zcard(finished)).toBe(1);

    // A duplicate is no new work; a new child is.
    const dup = { crawl: childCrawl(crawl), request: queueRequest('http://x.com/1') };
    expect(await frontier.enqueue('link', [dup], T0 + 1000)).toEqual(['duplicate']);
    expect(await redis.zcard(finished)).toBe(1);
    const child = { crawl: childCrawl(crawl), request: queueRequest('http://x.com/2', -9, 1) };
    expect(await frontier.enqueue('link', [child], T0 + 2000)).toEqual(['queued']);
    expect(await redis.zcard(finished)).toBe(0);
    expect(await frontier.sweepFinished('link', T0 + 10 * TTL_MS)).toBe(0);
    expect((await frontier.crawlInfo('link', 'app', 'c1', T0 + 10 * TTL_MS))?.queued).toBe(1);

    const [l] = await leaseAll(frontier, 'link', T0 + 5000);
    expect((await frontier.ack(l as Lease, 'done', T0 + 6000)).complete).toBe(true);
    expect(await frontier.sweepFinished('link', T0 + 6000 + TTL_MS - 1)).toBe(0);
    expect(await frontier.sweepFinished('link', T0 + 6000 + TTL_MS)).toBe(1);
    expect(await frontier.appInfo('link', 'app', T0 + 6000 + TTL_MS)).toEqual({});
  });

  test('sweepFinished works through more crawls than its per-call limit, and drops what stopped crawls left', async () => {
    const frontier = testFrontier(redis, { dupefilterTtlSec: TTL_MS / 1000 });
    const keys = partitionKeys(frontier.partitionFor('link'));
    for (let i = 0; i < 7; i++) await crawlToCompletion(frontier, seedCrawl('app', `c${i}`), [`http://x.com/${i}`], T0);
    const stopped = seedCrawl('app', 'stopped');
    await frontier.enqueue(
      'link',
      crawlItems(stopped, [queueRequest('http://y.com/1'), queueRequest('http://z.com/1')]),
      T0,
    );
    expect(await redis.zcard(keys.finished)).toBe(7);
    expect(await redis.zcard(keys.crawlIndex)).toBe(2);
    // A stop settles the counters at once and leaves their deletion to the sweep (due now).
    await frontier.stop('link', 'app', 'c0', T0 + 1);
    expect((await frontier.stop('link', 'app', 'stopped', T0 + 1)).purged).toBe(2);
    expect(await frontier.backlog('link')).toEqual({});
    expect(await frontier.sweepFinished('link', T0 + 2, 4)).toBe(0);
    expect(await redis.zcard(keys.crawlIndex)).toBe(0);
    expect(await frontier.sweepFinished('link', T0 + TTL_MS, 4)).toBe(6);
    expect(await frontier.appInfo('link', 'app', T0 + TTL_MS)).toEqual({});
    expect(await redis.zcard(keys.finished)).toBe(0);
  });
});

describe('spider types sharing a partition (SCHEDULER_TYPE_ENABLED=false)', () => {
  test('two spider types crawls with the same appid/crawlid are two crawls: own dupefilter, settings, info, stop, expiry', async () => {
    const frontier = testFrontier(redis, { typeEnabled: false });
    expect(frontier.partitionFor('link').scope).toBe('all');
    expect(frontier.partitionFor('wandering').scope).toBe('all');
    const link = seedCrawl('app', 'c1', { spiderid: 'link', expires: T0S + 10, attrs: { who: 'link' } });
    const wandering = seedCrawl('app', 'c1', { spiderid: 'wandering', expires: T0S + 20, attrs: { who: 'wandering' } });
    const urls = ['http://x.com/1', 'http://y.com/2'];
    expect(
      await frontier.enqueue(
        'link',
        crawlItems(
          link,
          urls.map((u) => queueRequest(u)),
        ),
        T0,
      ),
    ).toEqual(['queued', 'queued']);
    // Same URLs, same appid/crawlid, other spider type: not duplicates.
    expect(await frontier.enqueue('wandering', crawlItems(wandering, [queueRequest(urls[0] as string)]), T0)).toEqual([
      'queued',
    ]);

    const l = await frontier.crawlInfo('link', 'app', 'c1', T0);
    const w = await frontier.crawlInfo('wandering', 'app', 'c1', T0);
    expect([l?.settings, l?.queued]).toEqual([link.settings, 2]);
    expect([w?.settings, w?.queued]).toEqual([wandering.settings, 1]);
    expect((await frontier.appInfo('link', 'app', T0)).c1?.settings).toEqual(link.settings);
    expect((await frontier.appInfo('wandering', 'app', T0)).c1?.settings).toEqual(wandering.settings);
    expect((await frontier.dueCrawls('link', T0 + 30_000)).map((s) => s.spiderid)).toEqual(['link']);
    expect((await frontier.dueCrawls('wandering', T0 + 30_000)).map((s) => s.spiderid)).toEqual(['wandering']);

    // Stopping one leaves the other alone.
    expect((await frontier.stop('link', 'app', 'c1', T0 + 1)).purged).toBe(2);
    expect(await frontier.crawlInfo('link', 'app', 'c1', T0 + 1)).toBeUndefined();
    expect((await frontier.crawlInfo('wandering', 'app', 'c1', T0 + 1))?.queued).toBe(1);
    expect(await leaseAll(frontier, 'link', T0 + 2)).toEqual([]);
    const [lease] = await leaseAll(frontier, 'wandering', T0 + 2);
    expect([lease?.url, lease?.crawl.attrs]).toEqual(['http://x.com/1', { who: 'wandering' }]);
    expect(await frontier.enqueue('link', [{ crawl: link, request: queueRequest('http://x.com/9') }], T0 + 3)).toEqual([
      'stopped',
    ]);
    expect(
      await frontier.enqueue('wandering', [{ crawl: wandering, request: queueRequest('http://x.com/9') }], T0 + 3),
    ).toEqual(['queued']);
  });
});

describe('a crawl record cjson cannot decode (written before requests were checked for well-formed Unicode)', () => {
  test('stop purges it whole and says how many, and expiry of the other crawls goes on', async () => {
    const frontier = testFrontier(redis);
    // Validation refuses lone surrogates now; the frontier API does not, so this is how an old record looks.
    const bad = seedCrawl('app', 'bad', { attrs: { k: '\uD800' }, expires: T0S + 1 });
    const good = seedCrawl('app', 'good', { expires: T0S + 1 });
    await frontier.enqueue(
      'link',
      crawlItems(bad, [queueRequest('http://x.com/1'), queueRequest('http://x.com/2')]),
      T0,
    );
    await frontier.enqueue('link', crawlItems(good, [queueRequest('http://y.com/1')]), T0);

    expect((await frontier.dueCrawls('link', T0 + 5000)).map((s) => s.crawlid).sort()).toEqual(['bad', 'good']);
    const stopped = await frontier.stop('link', 'app', 'bad', T0 + 5000);
    expect(stopped.purged).toBe(2);
    expect(await frontier.crawlInfo('link', 'app', 'bad', T0 + 5000)).toBeUndefined();
    // Nothing half-deleted blocks the rest: the other crawl is still due and stops cleanly.
    expect((await frontier.dueCrawls('link', T0 + 5000)).map((s) => s.crawlid)).toEqual(['good']);
    expect((await frontier.stop('link', 'app', 'good', T0 + 5000)).purged).toBe(1);
    expect(await frontier.dueCrawls('link', T0 + 5000)).toEqual([]);
  });
});

import { describe, expect, test } from 'vitest';
import { PartialBatchError } from '../../lib/errors.ts';
import type { CrawlRef, Lease, QueueRequest } from '../../lib/frontier-model.ts';
import { MAX_FOLDED_CHILDREN } from '../../lib/redis/ack-fold.ts';
import type { Frontier } from '../../lib/redis/frontier.ts';
import {
  childCrawl,
  frontierTestRedis,
  leaseAll,
  queueRequest,
  seedCrawl,
  T0,
  testFrontier,
} from '../helpers/frontier.ts';
import { recordScriptCalls } from '../helpers/scripts.ts';

const redis = frontierTestRedis();

const LEASE_MS = 30_000;

type Item = { crawl: CrawlRef; request: QueueRequest };

/** Children of `crawl` at depth 1, priority -5, for the lease's own spider type `link`. */
function children(crawl: CrawlRef, urls: string[], spider = 'link'): Map<string, Item[]> {
  return new Map([[spider, urls.map((u) => ({ crawl: childCrawl(crawl), request: queueRequest(u, -5, 1) }))]]);
}

/** A child of `crawl` handed off to the spider type `wandering` (another hash slot): http://w.com/1 at depth 1. */
function handOffOf(crawl: CrawlRef): Item {
  return {
    crawl: { ...crawl, settings: { ...(crawl.settings as NonNullable<CrawlRef['settings']>), spiderid: 'wandering' } },
    request: queueRequest('http://w.com/1', -5, 1),
  };
}

async function seed(frontier: Frontier, crawl: CrawlRef, url = 'http://a.com/seed'): Promise<Lease> {
  expect(await frontier.enqueue('link', [{ crawl, request: queueRequest(url, 5) }], T0)).toEqual(['queued']);
  const [lease] = await leaseAll(frontier, 'link', T0, { max: 1 });
  expect(lease).toBeDefined();
  return lease as Lease;
}

async function counts(frontier: Frontier, crawlid = 'c1', spider = 'link') {
  const info = await frontier.crawlInfo(spider, 'app', crawlid);
  return info && { queued: info.queued, leased: info.leased, done: info.done, failed: info.failed };
}

/** The names of the scripts run meanwhile, in order. */
async function scriptsRun(run: () => Promise<unknown>): Promise<string[]> {
  return (await recordScriptCalls(redis, run)).map((c) => c.script);
}

describe('ack with children', () => {
  test('queues the children and acks the lease in one script call; the children are leasable at depth 1', async () => {
    const frontier = testFrontier(redis);
    const crawl = seedCrawl('app', 'c1', { maxdepth: 2 });
    const lease = await seed(frontier, crawl);
    let ack: Awaited<ReturnType<Frontier['ack']>> | undefined;
    const run = await scriptsRun(async () => {
      ack = await frontier.ack(lease, 'done', T0 + 1, children(crawl, ['http://a.com/1', 'http://b.com/2']));
    });
    expect(run).toEqual(['ack-enqueue']);
    expect(ack).toEqual({
      acked: true,
      complete: false,
      queued: 2,
      leased: 0,
      done: 1,
      failed: 0,
      children: new Map([['link', ['queued', 'queued']]]),
    });
    expect(await counts(frontier)).toEqual({ queued: 2, leased: 0, done: 1, failed: 0 });
    const next = await leaseAll(frontier, 'link', T0 + 2);
    expect(next.map((l) => [l.url, l.depth, l.priority]).sort()).toEqual([
      ['http://a.com/1', 1, -5],
      ['http://b.com/2', 1, -5],
    ]);
  });

  test('an ack without children (or with none left for its partition) stays one plain ack call', async () => {
    const frontier = testFrontier(redis);
    const crawl = seedCrawl('app', 'c1');
    const lease = await seed(frontier, crawl);
    const run = await scriptsRun(async () => {
      expect((await frontier.ack(lease, 'done', T0 + 1, new Map([['link', []]]))).complete).toBe(true);
    });
    expect(run).toEqual(['ack']);
  });

  test('the dupefilter holds: a child seen before in the crawl, or twice in one ack, is queued once', async () => {
    const frontier = testFrontier(redis);
    const crawl = seedCrawl('app', 'c1', { maxdepth: 2 });
    const lease = await seed(frontier, crawl);
    const ack = await frontier.ack(
      lease,
      'done',
      T0 + 1,
      children(crawl, ['http://a.com/seed', 'http://a.com/1', 'http://a.com/1', 'http://a.com/2']),
    );
    expect(ack.children?.get('link')).toEqual(['duplicate', 'queued', 'duplicate', 'queued']);
    expect(ack).toMatchObject({ acked: true, complete: false, queued: 2 });
    const [one] = await leaseAll(frontier, 'link', T0 + 2, { max: 1 });
    expect((await frontier.ack(one as Lease, 'done', T0 + 3, children(crawl, ['http://a.com/2']))).children).toEqual(
      new Map([['link', ['duplicate']]]),
    );
    expect(await counts(frontier)).toEqual({ queued: 1, leased: 0, done: 2, failed: 0 });
  });

  test('the domain page cap holds for children queued with an ack', async () => {
    const frontier = testFrontier(redis);
    const crawl = seedCrawl('app', 'c1', { maxdepth: 2, domain_max_pages: 2 });
    const lease = await seed(frontier, crawl);
    const ack = await frontier.ack(
      lease,
      'done',
      T0 + 1,
      children(crawl, ['http://a.com/1', 'http://a.com/2', 'http://b.com/1']),
    );
    expect(ack.children?.get('link')).toEqual(['queued', 'capped', 'queued']);
    expect(await counts(frontier)).toEqual({ queued: 2, leased: 0, done: 1, failed: 0 });
  });

  test('the ack that leaves nothing queued or leased reports the crawl complete, exactly once', async () => {
    const frontier = testFrontier(redis);
    const crawl = seedCrawl('app', 'c1', { maxdepth: 2 });
    const lease = await seed(frontier, crawl);
    // Children queued with the ack keep the crawl open.
    expect((await frontier.ack(lease, 'done', T0 + 1, children(crawl, ['http://a.com/1']))).complete).toBe(false);
    const [child] = await leaseAll(frontier, 'link', T0 + 2);
    // Children that are all duplicates queue nothing, so this ack completes the crawl.
    const last = await frontier.ack(
      child as Lease,
      'fail',
      T0 + 3,
      children(crawl, ['http://a.com/seed', 'http://a.com/1']),
    );
    expect(last).toMatchObject({ acked: true, complete: true, queued: 0, leased: 0, done: 1, failed: 1 });
    expect(last.children?.get('link')).toEqual(['duplicate', 'duplicate']);
    // Any later ack of the same lease, with or without children, is a duplicate and reports nothing.
    const again = await frontier.ack(child as Lease, 'done', T0 + 4, children(crawl, ['http://a.com/1']));
    expect(again).toMatchObject({ acked: false, complete: false });
    expect(await counts(frontier)).toEqual({ queued: 0, leased: 0, done: 1, failed: 1 });
  });

  test('10 acks with children sent at once: exactly one reports the crawl complete, after every child is acked', async () => {
    const frontier = testFrontier(redis);
    const crawl = seedCrawl('app', 'c1', { maxdepth: 2 });
    await frontier.enqueue(
      'link',
      Array.from({ length: 10 }, (_, i) => ({
        crawl: i === 0 ? crawl : childCrawl(crawl),
        request: queueRequest(`http://d${i % 3}.com/${i}`, 5),
      })),
      T0,
    );
    const leases = await leaseAll(frontier, 'link', T0);
    expect(leases).toHaveLength(10);
    // Each page links to the next one's URL and to one new page of its own.
    const acks = await Promise.all(
      leases.map((l, i) =>
        frontier.ack(
          l,
          'done',
          T0 + 1,
          children(crawl, [`http://d${((i + 1) % 10) % 3}.com/${(i + 1) % 10}`, `${l.url}/x`]),
        ),
      ),
    );
    expect(acks.filter((a) => a.acked)).toHaveLength(10);
    expect(acks.filter((a) => a.complete)).toHaveLength(0);
    const grandchildren = await leaseAll(frontier, 'link', T0 + 2);
    expect(grandchildren).toHaveLength(10);
    const last = await Promise.all(grandchildren.map((l) => frontier.ack(l, 'done', T0 + 3, children(crawl, [l.url]))));
    expect(last.filter((a) => a.complete)).toHaveLength(1);
    expect(await counts(frontier)).toEqual({ queued: 0, leased: 0, done: 20, failed: 0 });
  });

  test('a late ack of an expired, reclaimed lease stores its children and removes the queued copy', async () => {
    const frontier = testFrontier(redis, { leaseMs: LEASE_MS });
    const crawl = seedCrawl('app', 'c1', { maxdepth: 2 });
    const slow = await seed(frontier, crawl);
    expect(await frontier.reclaim('link', T0 + LEASE_MS + 1)).toBe(1);
    const late = await frontier.ack(slow, 'done', T0 + LEASE_MS + 2, children(crawl, ['http://a.com/1']));
    expect(late).toMatchObject({ acked: true, complete: false, queued: 1, leased: 0, done: 1 });
    const next = await leaseAll(frontier, 'link', T0 + LEASE_MS + 3);
    expect(next.map((l) => l.url)).toEqual(['http://a.com/1']);
  });

  test('an expired lease leased again: the first holder to ack counts, the other still adds only new children', async () => {
    const frontier = testFrontier(redis, { leaseMs: LEASE_MS });
    const crawl = seedCrawl('app', 'c1', { maxdepth: 2 });
    const slow = await seed(frontier, crawl);
    await frontier.reclaim('link', T0 + LEASE_MS + 1);
    const [second] = await leaseAll(frontier, 'link', T0 + LEASE_MS + 1);
    const first = await frontier.ack(second as Lease, 'done', T0 + LEASE_MS + 2, children(crawl, ['http://a.com/1']));
    expect(first).toMatchObject({ acked: true, complete: false, queued: 1 });
    // The slow holder fetched the page too (it may have changed meanwhile): its ack is refused, its children deduplicated.
    const late = await frontier.ack(
      slow,
      'done',
      T0 + LEASE_MS + 3,
      children(crawl, ['http://a.com/1', 'http://a.com/2']),
    );
    expect(late).toMatchObject({ acked: false, complete: false });
    expect(late.children?.get('link')).toEqual(['duplicate', 'queued']);
    expect(await counts(frontier)).toEqual({ queued: 2, leased: 0, done: 1, failed: 0 });
  });

  test('the lease of a crawl stopped meanwhile is not counted, and its children are refused', async () => {
    const frontier = testFrontier(redis);
    const crawl = seedCrawl('app', 'c1', { maxdepth: 2 });
    const lease = await seed(frontier, crawl);
    await frontier.stop('link', 'app', 'c1', T0 + 1);
    const ack = await frontier.ack(lease, 'done', T0 + 2, children(crawl, ['http://a.com/1']));
    expect(ack).toMatchObject({ acked: false, complete: false });
    expect(ack.children?.get('link')).toEqual(['stopped']);
    expect(await leaseAll(frontier, 'link', T0 + 3)).toEqual([]);
  });

  test('hand-offs to another spider type (another hash slot) are queued by an enqueue of their own, before the ack', async () => {
    const frontier = testFrontier(redis);
    const crawl = seedCrawl('app', 'c1', { maxdepth: 2 });
    const lease = await seed(frontier, crawl);
    const handOff = handOffOf(crawl);
    const all = new Map([...children(crawl, ['http://a.com/1']), ['wandering', [handOff]]]);
    let complete: boolean | undefined;
    const run = await scriptsRun(async () => {
      const ack = await frontier.ack(lease, 'done', T0 + 1, all);
      complete = ack.complete;
      expect(ack.children).toEqual(
        new Map([
          ['wandering', ['queued']],
          ['link', ['queued']],
        ]),
      );
    });
    expect(run).toEqual(['enqueue', 'ack-enqueue']);
    expect(complete).toBe(false);
    expect((await leaseAll(frontier, 'wandering', T0 + 2)).map((l) => l.url)).toEqual(['http://w.com/1']);
    expect((await leaseAll(frontier, 'link', T0 + 2)).map((l) => l.url)).toEqual(['http://a.com/1']);
  });

  test('a script error in the children leaves the lease unacked (children are never stored after the ack)', async () => {
    const frontier = testFrontier(redis);
    const crawl = seedCrawl('app', 'c1', { maxdepth: 2 });
    const lease = await seed(frontier, crawl);
    // A depth past what a member can encode: enqueue's part of the script fails.
    const bad = new Map([
      ['link', [{ crawl: childCrawl(crawl), request: queueRequest('http://a.com/1', -5, 2 ** 50) }]],
    ]);
    await expect(frontier.ack(lease, 'done', T0 + 1, bad)).rejects.toThrow(/frontier integer too large/);
    expect(await counts(frontier)).toEqual({ queued: 0, leased: 1, done: 0, failed: 0 });
    expect((await frontier.ack(lease, 'done', T0 + 2)).complete).toBe(true);
  });
});

describe('ackMany with children (the pages of one Kafka batch)', () => {
  /** Seeds `urls` (one crawl) and leases them all. */
  async function leased(frontier: Frontier, crawl: CrawlRef, urls: string[]): Promise<Lease[]> {
    await frontier.enqueue(
      'link',
      urls.map((u, i) => ({ crawl: i === 0 ? crawl : childCrawl(crawl), request: queueRequest(u, 5) })),
      T0,
    );
    const leases = await leaseAll(frontier, 'link', T0);
    expect(leases).toHaveLength(urls.length);
    return leases;
  }

  test("one script call queues every page's children, then acks each page; a child two pages share is queued once", async () => {
    const frontier = testFrontier(redis);
    const crawl = seedCrawl('app', 'c1', { maxdepth: 2 });
    const [a, b, c] = await leased(frontier, crawl, ['http://a.com/1', 'http://b.com/1', 'http://c.com/1']);
    let acks: Awaited<ReturnType<Frontier['ackMany']>> = [];
    const run = await scriptsRun(async () => {
      acks = await frontier.ackMany(
        [
          { lease: a as Lease, outcome: 'done', children: children(crawl, ['http://a.com/2', 'http://x.com/shared']) },
          { lease: b as Lease, outcome: 'fail' },
          { lease: c as Lease, outcome: 'done', children: children(crawl, ['http://x.com/shared', 'http://c.com/2']) },
        ],
        T0 + 1,
      );
    });
    expect(run).toEqual(['ack-enqueue']);
    expect(acks.map((r) => [r.acked, r.complete])).toEqual([
      [true, false],
      [true, false],
      [true, false],
    ]);
    expect(acks[0]?.children).toEqual(new Map([['link', ['queued', 'queued']]]));
    expect(acks[1]?.children).toBeUndefined();
    expect(acks[2]?.children).toEqual(new Map([['link', ['duplicate', 'queued']]]));
    expect(await counts(frontier)).toEqual({ queued: 3, leased: 0, done: 2, failed: 1 });
    expect((await leaseAll(frontier, 'link', T0 + 2)).map((l) => l.url).sort()).toEqual([
      'http://a.com/2',
      'http://c.com/2',
      'http://x.com/shared',
    ]);
  });

  test('the last acks of a crawl in one call: only the one that leaves nothing queued or leased reports it complete', async () => {
    const frontier = testFrontier(redis);
    const crawl = seedCrawl('app', 'c1', { maxdepth: 1 });
    const [a, b] = await leased(frontier, crawl, ['http://a.com/1', 'http://b.com/1']);
    const acks = await frontier.ackMany(
      [
        { lease: a as Lease, outcome: 'done', children: new Map([['link', []]]) },
        { lease: b as Lease, outcome: 'done' },
      ],
      T0 + 1,
    );
    expect(acks.map((r) => r.complete)).toEqual([false, true]);
    // With a child queued by the batch, no ack of it reports the crawl complete.
    const crawl2 = seedCrawl('app', 'c2', { maxdepth: 2 });
    const [d, e] = await leased(frontier, crawl2, ['http://d.com/1', 'http://e.com/1']);
    const again = await frontier.ackMany(
      [
        { lease: d as Lease, outcome: 'done' },
        { lease: e as Lease, outcome: 'done', children: children(crawl2, ['http://e.com/2']) },
      ],
      T0 + 2,
    );
    expect(again.map((r) => r.complete)).toEqual([false, false]);
    expect(await counts(frontier, 'c2')).toEqual({ queued: 1, leased: 0, done: 2, failed: 0 });
  });

  test('a page with a hand-off is acked alone (its enqueue first); the others still go together', async () => {
    const frontier = testFrontier(redis);
    const crawl = seedCrawl('app', 'c1', { maxdepth: 2 });
    const [a, b, c] = await leased(frontier, crawl, ['http://a.com/1', 'http://b.com/1', 'http://c.com/1']);
    const handOff = handOffOf(crawl);
    const run = await scriptsRun(async () => {
      const acks = await frontier.ackMany(
        [
          { lease: a as Lease, outcome: 'done', children: children(crawl, ['http://a.com/2']) },
          { lease: b as Lease, outcome: 'done', children: new Map([['wandering', [handOff]]]) },
          { lease: c as Lease, outcome: 'done', children: children(crawl, ['http://c.com/2']) },
        ],
        T0 + 1,
      );
      expect(acks.every((r) => r.acked)).toBe(true);
      expect(acks[1]?.children).toEqual(new Map([['wandering', ['queued']]]));
    });
    expect(run).toEqual(['enqueue', 'ack', 'ack-enqueue']);
    expect((await leaseAll(frontier, 'wandering', T0 + 2)).map((l) => l.url)).toEqual(['http://w.com/1']);
    expect(await counts(frontier)).toEqual({ queued: 2, leased: 0, done: 3, failed: 0 });
  });

  test('a child Redis refuses fails its whole call, atomically: nothing of it stored, the other calls stored, and the error says which', async () => {
    const frontier = testFrontier(redis);
    const crawl = seedCrawl('app', 'c1', { maxdepth: 2 });
    const [a, b, c] = await leased(frontier, crawl, ['http://a.com/1', 'http://b.com/1', 'http://c.com/1']);
    const handOff = handOffOf(crawl);
    // A depth past what a member can encode: the enqueue part of the grouped call fails.
    const bad = new Map([
      ['link', [{ crawl: childCrawl(crawl), request: queueRequest('http://a.com/2', -5, 2 ** 50) }]],
    ]);
    const error = await frontier
      .ackMany(
        [
          { lease: a as Lease, outcome: 'done', children: bad },
          { lease: b as Lease, outcome: 'done', children: new Map([['wandering', [handOff]]]) },
          { lease: c as Lease, outcome: 'done', children: children(crawl, ['http://c.com/2']) },
        ],
        T0 + 1,
      )
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(PartialBatchError);
    const partial = error as PartialBatchError<{ acked: boolean }>;
    expect(partial.results.map((r) => r?.acked)).toEqual([undefined, true, undefined]);
    expect(String(partial.errors[0])).toMatch(/frontier integer too large/);
    expect(partial.errors[2]).toBe(partial.errors[0]);
    expect(partial.errors[1]).toBeUndefined();
    // b (acked alone) is stored; a and c are still leased, c's child not queued.
    expect(await counts(frontier)).toEqual({ queued: 0, leased: 2, done: 1, failed: 0 });
  });

  test('more children than MAX_FOLDED_CHILDREN are split over several calls, in page order', async () => {
    const frontier = testFrontier(redis);
    const crawl = seedCrawl('app', 'c1', { maxdepth: 2 });
    const leases = await leased(frontier, crawl, ['http://a.com/1', 'http://b.com/1', 'http://c.com/1']);
    const per = Math.ceil(MAX_FOLDED_CHILDREN / 2) + 1;
    const urls = (host: string) => Array.from({ length: per }, (_, i) => `http://${host}.com/p${i}`);
    const run = await scriptsRun(async () => {
      const acks = await frontier.ackMany(
        leases.map((l, i) => ({ lease: l, outcome: 'done' as const, children: children(crawl, urls(`h${i}`)) })),
        T0 + 1,
      );
      expect(acks.every((r) => r.acked && r.children?.get('link')?.every((o) => o === 'queued'))).toBe(true);
    });
    expect(run).toEqual(['ack-enqueue', 'ack-enqueue', 'ack-enqueue']);
    expect(await counts(frontier)).toEqual({ queued: 3 * per, leased: 0, done: 3, failed: 0 });
  });
});

describe('a page with very many children (issue 30 defect 1: 10,000 links crashed the worker)', () => {
  const many = (n: number, host = 'a.com') => Array.from({ length: n }, (_, i) => `http://${host}/p${i}`);

  test.each([10_000, 50_000])(
    'ack queues all %i children in bounded script calls and acks the page',
    async (n) => {
      const frontier = testFrontier(redis);
      const crawl = seedCrawl('app', 'c1', { maxdepth: 2 });
      const lease = await seed(frontier, crawl);
      const calls = await recordScriptCalls(redis, async () => {
        const ack = await frontier.ack(lease, 'done', T0 + 1, children(crawl, many(n)));
        expect(ack.acked).toBe(true);
        expect(ack.children?.get('link')?.length).toBe(n);
        expect(ack.children?.get('link')?.every((o) => o === 'queued')).toBe(true);
      });
      // No call carries more than a bounded share of the children (one script call per page was 7 ARGV per child).
      expect(Math.max(...calls.map((c) => c.argv.length))).toBeLessThan(MAX_FOLDED_CHILDREN * 8 + 100);
      expect(await counts(frontier)).toEqual({ queued: n, leased: 0, done: 1, failed: 0 });
    },
    120_000,
  );

  test('ackMany acks a page with 10,000 children together with ordinary pages', async () => {
    const frontier = testFrontier(redis);
    const crawl = seedCrawl('app', 'c1', { maxdepth: 2 });
    for (const u of ['http://a.com/s1', 'http://a.com/s2', 'http://a.com/s3'])
      await frontier.enqueue('link', [{ crawl, request: queueRequest(u, 5) }], T0);
    const leases = await leaseAll(frontier, 'link', T0, { max: 3 });
    expect(leases).toHaveLength(3);
    const results = await frontier.ackMany(
      [
        { lease: leases[0] as Lease, outcome: 'done', children: children(crawl, ['http://a.com/x']) },
        { lease: leases[1] as Lease, outcome: 'done', children: children(crawl, many(10_000, 'b.com')) },
        { lease: leases[2] as Lease, outcome: 'done' },
      ],
      T0 + 1,
    );
    expect(results.map((r) => r.acked)).toEqual([true, true, true]);
    expect(results[1]?.children?.get('link')?.filter((o) => o === 'queued')).toHaveLength(10_000);
    expect(await counts(frontier)).toEqual({ queued: 10_001, leased: 0, done: 3, failed: 0 });
  }, 120_000);

  test('enqueue of 50,000 requests in one call is cut into bounded script calls', async () => {
    const frontier = testFrontier(redis);
    const crawl = seedCrawl('app', 'c1', { maxdepth: 2 });
    const items = many(50_000).map((u) => ({ crawl, request: queueRequest(u, 1) }));
    const calls = await recordScriptCalls(redis, async () => {
      const out = await frontier.enqueue('link', items, T0);
      expect(out.filter((o) => o === 'queued')).toHaveLength(50_000);
    });
    expect(calls.length).toBeGreaterThan(1);
    expect(Math.max(...calls.map((c) => c.argv.length))).toBeLessThan(MAX_FOLDED_CHILDREN * 8 + 100);
  }, 120_000);
});

/**
 * The compact storage of the frontier: queue members (URL relative to its domain, Huffman-coded; priority,
 * sequence and small integers in base 62), the bucketed dupefilter, and crawl refs that are reused.
 */
import { createHash } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import type { CrawlRef, QueueRequest } from '../../lib/frontier-model.ts';
import { crawlKey, dupefilterKey, partitionKeys } from '../../lib/redis/keys.ts';
import { prng } from '../../localstack/site/prng.ts';
import {
  childCrawl,
  frontierTestRedis,
  leaseAll,
  queueRequest,
  seedCrawl,
  T0,
  testFrontier,
} from '../helpers/frontier.ts';

const redis = frontierTestRedis();

type Item = { crawl: CrawlRef; request: QueueRequest };

/** A request with an explicit domain and fingerprint (the frontier trusts both). */
function rawRequest(url: string, domain: string, fingerprint: Buffer, priority = 1, depth = 0, retries = 0) {
  return { url, domain, fingerprint, priority, depth, retries } satisfies QueueRequest;
}

function fp(seed: string): Buffer {
  return createHash('sha1').update(seed).digest().subarray(0, 8);
}

describe('queue members', () => {
  test('every URL shape comes back from a lease exactly as it was queued, with its priority, depth and retries', async () => {
    const frontier = testFrontier(redis);
    const cases: [url: string, domain: string][] = [
      ['https://example.com/a/b?c=d#e', 'example.com'],
      ['http://example.com', 'example.com'],
      ['https://www.example.com/', 'example.com'],
      ['http://www.example.com?q=1', 'example.com'],
      ['https://blog.shop.example.co.uk/x/y.html', 'example.co.uk'],
      ['http://a.b.example.com#frag', 'example.com'],
      ['https://user:pw@www.example.com/private', 'example.com'],
      ['https://example.com:8443/port', 'example.com'],
      ['https://WWW.Example.COM/Upper', 'example.com'],
      ['https://example.com/caf%C3%A9/\u00e9t\u00e9/\u{1F600}?q=\u4e2d\u6587', 'example.com'],
      ['http://127.0.0.1:8080/ip', '127.0.0.1'],
      ['http://localhost/x', 'localhost'],
      ['https://notexample.com/other-host', 'example.com'],
      ['ftp://example.com/file', 'example.com'],
      ['https://example.com/\u0000nul/\u0001/\u00ff/~{|}', 'example.com'],
      ['https://b\u00fccher.example/pfad', 'b\u00fccher.example'],
    ];
    const crawl = seedCrawl('app', 'shapes');
    const items: Item[] = cases.map(([url, domain], i) => ({
      crawl: i === 0 ? crawl : childCrawl(crawl),
      request: rawRequest(url, domain, fp(url), 100 - i, i % 4, i),
    }));
    // Small integers beyond one base-62 digit, and the priority bounds.
    items.push({
      crawl: childCrawl(crawl),
      request: rawRequest('https://big.example/x', 'big.example', fp('big'), 1024, 61, 4000),
    });
    items.push({
      crawl: childCrawl(crawl),
      request: rawRequest('https://low.example/x', 'low.example', fp('low'), -1023, 1_000_000, 61),
    });
    expect(await frontier.enqueue('link', items, T0)).toEqual(items.map(() => 'queued'));

    // Leased by priority: the one at 1024 first, then the shapes in their order, the one at -1023 last.
    const leases = await leaseAll(frontier, 'link', T0);
    const got = leases.map((l) => [l.url, l.domain, l.priority, l.depth, l.retries]);
    const want = items.map(({ request: r }) => [r.url, r.domain, r.priority, r.depth, r.retries]);
    expect(got).toEqual([want[cases.length], ...want.slice(0, cases.length), want[cases.length + 1]]);
    for (const l of leases) expect((await frontier.ack(l, 'done', T0 + 1)).acked).toBe(true);
  });

  test('a retry keeps the URL and moves the priority down by 10, also from the lowest priority', async () => {
    const frontier = testFrontier(redis);
    const crawl = seedCrawl('app', 'r');
    await frontier.enqueue(
      'link',
      [{ crawl, request: rawRequest('https://www.e.com/p?x', 'e.com', fp('r'), -1020) }],
      T0,
    );
    const [first] = await leaseAll(frontier, 'link', T0);
    const r = await frontier.retry(first as never, 0, T0 + 1);
    expect(r.retried).toBe(true);
    const [again] = await leaseAll(frontier, 'link', T0 + 2);
    expect([again?.url, again?.priority, again?.retries, again?.handle]).toEqual([
      'https://www.e.com/p?x',
      -1023,
      1,
      r.handle,
    ]);
  });

  test('members stay compact: a typical 75-character URL takes well under its length plus the domain', async () => {
    const frontier = testFrontier(redis);
    const url = 'https://www.acmeblue123.com/articles/the-quick-guide-to-autumn-garden-care-and-x1f.html';
    await frontier.enqueue('link', [{ crawl: seedCrawl('app', 'c'), request: queueRequest(url) }], T0);
    const [member] = await redis.zrangeBuffer(partitionKeys(frontier.partitionFor('link')).queue, '0', '-1');
    // domain (15) + \0 + priority (2) + sequence (8) + ref, depth, retries (3) + flag (1) + Huffman-coded path.
    expect(member?.length).toBeLessThan(url.length);
  });
});

describe('dupefilter', () => {
  test('is exact across bucket splits: 12,000 fingerprints, near-collisions included, each accepted once', async () => {
    const frontier = testFrontier(redis);
    const random = prng(7);
    const crawl = seedCrawl('app', 'big');
    const fps: Buffer[] = [];
    for (let i = 0; i < 4000; i++) {
      const f = Buffer.alloc(8);
      for (let j = 0; j < 8; j++) f[j] = Math.floor(random() * 256);
      fps.push(f);
      // Same first 2 bytes (same bucket), different rest.
      const sameBucket = Buffer.from(f);
      sameBucket[7] = (f[7] as number) ^ 0x01;
      fps.push(sameBucket);
      // Same last 7 bytes (the stored part), different first byte (the bucket's low byte).
      const sameRest = Buffer.from(f);
      sameRest[0] = (f[0] as number) ^ 0x80;
      fps.push(sameRest);
    }
    const unique = new Set(fps.map((f) => f.toString('hex')));
    const batch = (list: Buffer[], from: number): Item[] =>
      list.map((f, i) => ({
        crawl: from + i === 0 ? crawl : childCrawl(crawl),
        request: rawRequest(`https://d${(from + i) % 50}.com/${from + i}`, `d${(from + i) % 50}.com`, f),
      }));
    let queued = 0;
    for (let i = 0; i < fps.length; i += 1000) {
      const outcomes = await frontier.enqueue('link', batch(fps.slice(i, i + 1000), i), T0);
      queued += outcomes.filter((o) => o === 'queued').length;
    }
    expect(queued).toBe(unique.size);
    // Everything again, in another order: all duplicates.
    const shuffled = [...fps].reverse();
    for (let i = 0; i < shuffled.length; i += 1000) {
      const outcomes = await frontier.enqueue('link', batch(shuffled.slice(i, i + 1000), i + 1), T0 + 1);
      expect(new Set(outcomes)).toEqual(new Set(['duplicate']));
    }
    // The table grew by splitting buckets, and stays about 7 bytes per fingerprint plus bucket overhead.
    const key = dupefilterKey(frontier.partitionFor('link'), crawlKey('app', 'big', 'link'));
    const [n, buckets] = String(await redis.hget(key, ''))
      .split(':')
      .map(Number);
    expect(n).toBe(unique.size);
    expect(buckets).toBeGreaterThan(256);
    // The buckets, the '' count and the 'g' token (includes/enqueue.lua).
    expect(await redis.hlen(key)).toBeLessThanOrEqual((buckets as number) + 2);
    expect(await redis.hget(key, 'g')).toMatch(/^[0-9A-Za-z]{8}$/);
    expect(Number(await redis.memory('USAGE', key))).toBeLessThan(unique.size * 16);
    expect(await redis.ttl(key)).toBeGreaterThan(0);
  });

  test('a seed that starts a crawl afresh ignores a dupefilter left under its name', async () => {
    const frontier = testFrontier(redis);
    const crawl = seedCrawl('app', 'c');
    const key = dupefilterKey(frontier.partitionFor('link'), crawlKey('app', 'c', 'link'));
    // As if a swept crawl's dupefilter had not expired yet.
    const f = queueRequest('http://x.com/1').fingerprint;
    await redis.hset(key, '', '1:256', f.subarray(0, 1), f.subarray(1));
    expect(await frontier.enqueue('link', [{ crawl, request: queueRequest('http://x.com/1') }], T0)).toEqual([
      'queued',
    ]);
  });
});

describe('crawl refs', () => {
  test('a reused ref does not bring back what its stopped crawl left in the queue', async () => {
    const frontier = testFrontier(redis);
    const keys = partitionKeys(frontier.partitionFor('link'));
    const old = seedCrawl('app', 'old');
    await frontier.enqueue(
      'link',
      ['http://x.com/1', 'http://x.com/2', 'http://y.com/1'].map((u, i) => ({
        crawl: i === 0 ? old : childCrawl(old),
        request: queueRequest(u, 5),
      })),
      T0,
    );
    const ref = await redis.hget(keys.crawlRefs, crawlKey('app', 'old', 'link'));
    expect((await frontier.stop('link', 'app', 'old', T0 + 1)).purged).toBe(3);
    // Not reused while the sweep has not dropped the stopped crawl's counters.
    await redis.hset(keys.crawlRefs, '#', Number(ref) - 1);
    await frontier.enqueue(
      'link',
      [{ crawl: seedCrawl('app', 'early'), request: queueRequest('http://z.com/') }],
      T0 + 1,
    );
    expect(await redis.hget(keys.crawlRefs, crawlKey('app', 'early', 'link'))).not.toBe(ref);
    await frontier.stop('link', 'app', 'early', T0 + 1);
    await frontier.sweepFinished('link', T0 + 1);
    // The ref counter wraps (or reaches the stopped crawl's ref again): the next crawl gets the same ref.
    await redis.hset(keys.crawlRefs, '#', Number(ref) - 1);
    const fresh = seedCrawl('app', 'fresh');
    await frontier.enqueue('link', [{ crawl: fresh, request: queueRequest('http://x.com/fresh', 1) }], T0 + 2);
    expect(await redis.hget(keys.crawlRefs, crawlKey('app', 'fresh', 'link'))).toBe(ref);

    const leases = await leaseAll(frontier, 'link', T0 + 3);
    expect(leases.map((l) => [l.crawl.crawlid, l.url])).toEqual([['fresh', 'http://x.com/fresh']]);
    expect((await frontier.crawlInfo('link', 'app', 'fresh', T0 + 3))?.leased).toBe(1);
    expect(await redis.zcard(keys.queue)).toBe(0);
  });

  test('counters stay exact for the largest refs (score = ref × 2^29 + count, near 2^53)', async () => {
    const frontier = testFrontier(redis);
    const keys = partitionKeys(frontier.partitionFor('link'));
    await redis.hset(keys.crawlRefs, '#', 2 ** 24 - 3);
    const small = seedCrawl('app', 'small');
    const big = seedCrawl('app', 'big', { domain_max_pages: 2 });
    await frontier.enqueue('link', [{ crawl: small, request: queueRequest('http://x.com/s') }], T0);
    const urls = ['http://x.com/1', 'http://x.com/2', 'http://x.com/3', 'http://y.com/1'];
    expect(
      await frontier.enqueue(
        'link',
        urls.map((u, i) => ({ crawl: i === 0 ? big : childCrawl(big), request: queueRequest(u, i) })),
        T0,
      ),
    ).toEqual(['queued', 'queued', 'capped', 'queued']);
    expect(await redis.hget(keys.crawlRefs, crawlKey('app', 'big', 'link'))).toBe('z18OWF.'); // 2^24 - 1 in base 62
    expect((await frontier.crawlInfo('link', 'app', 'big', T0))?.domains).toEqual({
      'x.com': { priorities: { 0: 1, 1: 1 }, total: 2 },
      'y.com': { priorities: { 3: 1 }, total: 1 },
    });
    expect((await frontier.stop('link', 'app', 'big', T0 + 1)).purged).toBe(3);
    expect(await frontier.backlog('link')).toEqual({ 'x.com': 1 });
    expect(await redis.zcard(keys.crawlIndex)).toBe(1);
    expect((await frontier.crawlInfo('link', 'app', 'small', T0 + 1))?.queued).toBe(1);
  });

  test('the ref counter wraps at 2^24 and skips refs still held', async () => {
    const frontier = testFrontier(redis);
    const keys = partitionKeys(frontier.partitionFor('link'));
    await frontier.enqueue('link', [{ crawl: seedCrawl('app', 'a'), request: queueRequest('http://x.com/a') }], T0);
    expect(await redis.hget(keys.crawlRefs, crawlKey('app', 'a', 'link'))).toBe('1');
    await redis.hset(keys.crawlRefs, '#', 2 ** 24 - 1);
    await frontier.enqueue('link', [{ crawl: seedCrawl('app', 'b'), request: queueRequest('http://x.com/b') }], T0);
    // Ref 1 is held by crawl a, so crawl b gets 2.
    expect(await redis.hget(keys.crawlRefs, crawlKey('app', 'b', 'link'))).toBe('2');
    const leases = await leaseAll(frontier, 'link', T0);
    expect(leases.map((l) => l.crawl.crawlid).sort()).toEqual(['a', 'b']);
  });
});

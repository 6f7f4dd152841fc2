/**
 * The crawler's dupefilter cache (lib/redis/dupe-cache.ts) against real Redis: children already sent are left out
 * of the ack, and every scenario (stop, a crawl fed again, an expired dupefilter or crawl) answers exactly what a
 * frontier without the cache answers, with the same queue afterwards.
 */
import { describe, expect, test } from 'vitest';
import type { AckResult, CrawlRef, Lease, QueueRequest } from '../../lib/frontier-model.ts';
import type { Frontier } from '../../lib/redis/frontier.ts';
import { crawlKey, dupefilterKey } from '../../lib/redis/keys.ts';
import {
  childCrawl,
  frontierTestRedis,
  leaseAll,
  queueRequest,
  seedCrawl,
  T0,
  testFrontier,
} from '../helpers/frontier.ts';
import { recordScriptCalls, type ScriptCall } from '../helpers/scripts.ts';
import { uniqueName } from '../helpers/services.ts';

const redis = frontierTestRedis();

type Item = { crawl: CrawlRef; request: QueueRequest };

function children(crawl: CrawlRef, paths: string[]): Map<string, Item[]> {
  return new Map([
    ['link', paths.map((p) => ({ crawl: childCrawl(crawl), request: queueRequest(`http://a.com/${p}`, -5, 1) }))],
  ]);
}

/** Queues `n` seeds of `crawl` and leases them all. */
async function seeds(frontier: Frontier, crawl: CrawlRef, n: number, now = T0, tag = 'seed'): Promise<Lease[]> {
  const items = Array.from({ length: n }, (_, i) => ({ crawl, request: queueRequest(`http://a.com/${tag}${i}`, 5) }));
  expect(await frontier.enqueue('link', items, now)).toEqual(items.map(() => 'queued'));
  const leases = await leaseAll(frontier, 'link', now, { max: n });
  expect(leases).toHaveLength(n);
  return leases;
}

/** How many children an ack-enqueue call sent (its ARGV: common 5, L, L pairs, TTL, spider, C, C groups of 6, R). */
function sentChildren(call: ScriptCall): number {
  expect(call.script).toBe('ack-enqueue');
  const at = 6 + 2 * Number(call.argv[5]);
  return Number(call.argv[at + 3 + 6 * Number(call.argv[at + 2])]);
}

/** A frontier with the cache and one without, each under its own prefix, to run one scenario on both. */
function pair(): { cached: Frontier; plain: Frontier } {
  return { cached: testFrontier(redis, { dupeCacheEntries: 10_000 }), plain: testFrontier(redis) };
}

/** Runs `scenario` on a frontier with the cache, then on one without: [cached, plain]. */
async function onBoth<T>(scenario: (frontier: Frontier) => Promise<T>): Promise<[T, T]> {
  const { cached, plain } = pair();
  return [await scenario(cached), await scenario(plain)];
}

async function ack(frontier: Frontier, lease: Lease, kids: Map<string, Item[]>, now = T0 + 1) {
  let result: AckResult | undefined;
  const calls = await recordScriptCalls(redis, async () => {
    result = await frontier.ack(lease, 'done', now, kids);
  });
  return { result: result as AckResult, calls };
}

/** The queue's URLs, in lease order (everything due at `now`). */
async function queued(frontier: Frontier, now: number): Promise<string[]> {
  return (await leaseAll(frontier, 'link', now)).map((l) => l.url);
}

function dupeKeyOf(frontier: Frontier, crawlid: string): string {
  return dupefilterKey(frontier.partitionFor('link'), crawlKey('app', crawlid, 'link'));
}

describe('dupefilter cache', () => {
  test('children sent before are left out of the ack and answered duplicate, as without the cache', async () => {
    const [cached, plain] = await onBoth(async (frontier) => {
      const crawl = seedCrawl('app', 'c', { maxdepth: 3 });
      const leases = await seeds(frontier, crawl, 3);
      const first = await ack(frontier, leases[0] as Lease, children(crawl, ['1', '2', '3']));
      const second = await ack(frontier, leases[1] as Lease, children(crawl, ['1', '2', '4', '3']));
      // Nothing new: the call still refreshes the dupefilter and acks.
      const third = await ack(frontier, leases[2] as Lease, children(crawl, ['4', '2']));
      return {
        outcomes: [first, second, third].map((a) => [a.result.acked, a.result.children?.get('link')]),
        sent: [first, second, third].map((a) => a.calls.map(sentChildren)),
        info: await frontier.crawlInfo('link', 'app', 'c', T0 + 2),
        queue: await queued(frontier, T0 + 3),
      };
    });
    expect(cached?.outcomes).toEqual([
      [true, ['queued', 'queued', 'queued']],
      [true, ['duplicate', 'duplicate', 'queued', 'duplicate']],
      [true, ['duplicate', 'duplicate']],
    ]);
    expect(plain?.outcomes).toEqual(cached?.outcomes);
    expect(cached?.sent).toEqual([[3], [1], [0]]);
    expect(plain?.sent).toEqual([[3], [4], [2]]);
    expect(cached?.info).toEqual(plain?.info);
    expect(cached?.queue).toEqual(['http://a.com/1', 'http://a.com/2', 'http://a.com/3', 'http://a.com/4']);
    expect(plain?.queue).toEqual(cached?.queue);
  });

  test('a crawl stopped and fed again: its children are queued again (the stale claim is caught, then sent in full)', async () => {
    const [cached, plain] = await onBoth(async (frontier) => {
      const crawl = seedCrawl('app', 'c', { maxdepth: 3 });
      const [l0] = await seeds(frontier, crawl, 1);
      await ack(frontier, l0 as Lease, children(crawl, ['1', '2']));
      await frontier.stop('link', 'app', 'c', T0 + 2);
      // Fed again once the stop's blacklist has passed (an hour in testFrontier).
      const later = T0 + 3_600_000 + 10;
      const [l1] = await seeds(frontier, crawl, 1, later, 'again');
      const again = await ack(frontier, l1 as Lease, children(crawl, ['1', '2', '3']), later + 1);
      return {
        outcome: again.result.children?.get('link'),
        calls: again.calls.map((c) => c.script),
        sent: again.calls.map(sentChildren),
        queue: await queued(frontier, later + 2),
      };
    });
    expect(cached?.outcome).toEqual(['queued', 'queued', 'queued']);
    expect(plain?.outcome).toEqual(cached?.outcome);
    expect(cached?.calls).toEqual(['ack-enqueue', 'ack-enqueue']);
    // The stale call sent only the one it did not know (and wrote nothing); the second sent all three.
    expect(cached?.sent).toEqual([1, 3]);
    expect(cached?.queue).toEqual(['http://a.com/1', 'http://a.com/2', 'http://a.com/3']);
    expect(plain?.queue).toEqual(cached?.queue);
  });

  test('a stopped crawl: a late ack with cached children gets what it gets without the cache', async () => {
    const [cached, plain] = await onBoth(async (frontier) => {
      const crawl = seedCrawl('app', 'c', { maxdepth: 3 });
      const [l0, l1] = await seeds(frontier, crawl, 2);
      await ack(frontier, l0 as Lease, children(crawl, ['1', '2']));
      await frontier.stop('link', 'app', 'c', T0 + 2);
      const late = await ack(frontier, l1 as Lease, children(crawl, ['1', '2', '3']), T0 + 3);
      return { result: late.result, queue: await queued(frontier, T0 + 4) };
    });
    expect(cached?.result.children?.get('link')).toEqual(['stopped', 'stopped', 'stopped']);
    expect(cached).toEqual(plain);
  });

  test('an expired dupefilter forgets its children, and so does the cache', async () => {
    const [cached, plain] = await onBoth(async (frontier) => {
      const crawl = seedCrawl('app', 'c', { maxdepth: 3 });
      const [l0, l1] = await seeds(frontier, crawl, 2);
      await ack(frontier, l0 as Lease, children(crawl, ['1', '2']));
      const key = dupeKeyOf(frontier, 'c');
      expect(await redis.pexpire(key, 1)).toBe(1);
      while ((await redis.exists(key)) === 1) await new Promise((r) => setTimeout(r, 5));
      const after = await ack(frontier, l1 as Lease, children(crawl, ['1', '2']));
      return { outcome: after.result.children?.get('link'), calls: after.calls.map((c) => c.script) };
    });
    expect(cached?.outcome).toEqual(['queued', 'queued']);
    expect(plain?.outcome).toEqual(cached?.outcome);
    expect(cached?.calls).toEqual(['ack-enqueue', 'ack-enqueue']);
  });

  test('a crawl past its expiry time: cached children are answered expired, as without the cache', async () => {
    const [cached, plain] = await onBoth(async (frontier) => {
      const crawl = seedCrawl('app', 'c', { maxdepth: 3, expires: Math.floor(T0 / 1000) + 10 });
      const [l0, l1] = await seeds(frontier, crawl, 2);
      await ack(frontier, l0 as Lease, children(crawl, ['1', '2']));
      const late = await ack(frontier, l1 as Lease, children(crawl, ['1', '2']), T0 + 20_000);
      return { result: late.result, sent: late.calls.map(sentChildren) };
    });
    expect(cached?.result.children?.get('link')).toEqual(['expired', 'expired']);
    expect(cached?.result).toEqual(plain?.result);
    expect(cached?.sent).toEqual([0]);
    expect(plain?.sent).toEqual([2]);
  });

  test('an ack whose children are all left out still refreshes the dupefilter TTL', async () => {
    const { cached: frontier } = pair();
    const crawl = seedCrawl('app', 'c', { maxdepth: 3 });
    const [l0, l1] = await seeds(frontier, crawl, 2);
    await ack(frontier, l0 as Lease, children(crawl, ['1', '2']));
    const key = dupeKeyOf(frontier, 'c');
    await redis.expire(key, 5);
    const again = await ack(frontier, l1 as Lease, children(crawl, ['2', '1']));
    expect(again.calls.map(sentChildren)).toEqual([0]);
    expect(await redis.ttl(key)).toBeGreaterThan(500);
  });

  test('a batch with a seed of the crawl claims nothing for it (the seed may start it afresh): sent in full, once', async () => {
    const { cached: frontier } = pair();
    const crawl = seedCrawl('app', 'c', { maxdepth: 3 });
    const [l0, l1] = await seeds(frontier, crawl, 2);
    await ack(frontier, l0 as Lease, children(crawl, ['1', '2']));
    const kids = children(crawl, ['1', '2']);
    const [first] = kids.get('link') as Item[];
    (first as Item).crawl = crawl; // with its settings, as a seed
    const again = await ack(frontier, l1 as Lease, kids);
    expect(again.calls.map((c) => c.script)).toEqual(['ack-enqueue']);
    expect(again.calls.map(sentChildren)).toEqual([2]);
    expect(again.result.children?.get('link')).toEqual(['duplicate', 'duplicate']);
  });

  test('two crawlers share a crawl: each leaves out only what it sent itself', async () => {
    const prefix = uniqueName();
    const a = testFrontier(redis, { dupeCacheEntries: 10_000, prefix });
    const b = testFrontier(redis, { dupeCacheEntries: 10_000, prefix });
    const crawl = seedCrawl('app', 'c', { maxdepth: 3 });
    const [l0, l1, l2] = await seeds(a, crawl, 3);
    const first = await ack(a, l0 as Lease, children(crawl, ['1', '2']));
    const other = await ack(b, l1 as Lease, children(crawl, ['1', '2', '3']));
    const back = await ack(a, l2 as Lease, children(crawl, ['3', '1']));
    expect([first, other, back].map((x) => x.result.children?.get('link'))).toEqual([
      ['queued', 'queued'],
      ['duplicate', 'duplicate', 'queued'],
      ['duplicate', 'duplicate'],
    ]);
    // b knew nothing; a knew 1 but not 3, which b queued.
    expect([first, other, back].map((x) => x.calls.map(sentChildren))).toEqual([[2], [3], [1]]);
  });
});

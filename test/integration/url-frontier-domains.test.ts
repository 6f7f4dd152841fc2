/**
 * The URL Frontier store against the cluster-mode Redis, as the Kafka side sees it: backlog per crawl and queue,
 * and the Kafka API's domain blacklist and throttle overrides applied to its queues (by the queue key's
 * registrable domain). The store's clock is injected: windows are tested by moving it.
 */
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import { urlFrontierGlobalKeys, urlFrontierQueueKeys } from '../../lib/redis/url-frontier/keys.ts';
import { type PutItem, queueDomain, SERVE_CAP, type ServedUrl } from '../../lib/redis/url-frontier/model.ts';
import { UrlFrontierStore } from '../../lib/redis/url-frontier/store.ts';
import { clusterRedis, uniqueName } from '../helpers/services.ts';
import { dropStores, UF_PARTITIONS } from '../helpers/url-frontier.ts';

const redis = clusterRedis();
const stores: UrlFrontierStore[] = [];
afterEach(async () => {
  await dropStores(redis, stores.splice(0));
});
afterAll(() => redis.disconnect());

const T0 = Date.UTC(2026, 10, 23, 12, 0, 0);

function open(partitions: number): { store: UrlFrontierStore; clock: { now: number } } {
  const clock = { now: T0 };
  const store = new UrlFrontierStore(redis, uniqueName('ufd'), { now: () => clock.now, partitions });
  stores.push(store);
  return { store, clock };
}

function discovered(crawl: string, key: string, urls: string[]): PutItem[] {
  return urls.map((url) => ({ crawl, key, url, kind: 'discovered', date: 0, metadata: {} }));
}

/** Serves every eligible queue of every crawl once; the URLs served. */
async function serveAll(store: UrlFrontierStore): Promise<string[]> {
  const out: ServedUrl[] = [];
  await store.getUrls({ maxQueues: 0, maxUrlsPerQueue: 0, holdSeconds: 600 }, (urls) => {
    out.push(...urls);
  });
  return out.map((u) => u.url).sort();
}

const pages = (host: string, n: number) => Array.from({ length: n }, (_, i) => `http://${host}/${i}`);

describe.each(UF_PARTITIONS)('URL Frontier store: the Kafka side (FRONTIER_PARTITIONS=%i)', (partitions) => {
  test("a queue's domain is its key's registrable domain; keys that are not host names are their own", () => {
    expect(queueDomain('www.shop.example.co.uk')).toBe('example.co.uk');
    expect(queueDomain('10.0.0.7')).toBe('10.0.0.7');
    expect(queueDomain('my queue/with spaces')).toBe('my queue/with spaces');
  });

  test('backlog counts scheduled and held URLs per crawl and queue, not completed ones', async () => {
    const { store } = open(partitions);
    await store.put(discovered('news', 'www.a.com', pages('www.a.com', 3)));
    await store.put(discovered('DEFAULT', 'b.org', pages('b.org', 2)));
    await store.put([
      { crawl: 'news', key: 'www.a.com', url: 'http://www.a.com/0', kind: 'known', date: 0, metadata: {} },
    ]);
    const served = (await store.serveQueues('DEFAULT', ['b.org'], 1, 60))[0];
    expect(served).toHaveLength(1);
    expect(await store.backlog()).toEqual({ news: { 'www.a.com': 2 }, DEFAULT: { 'b.org': 2 } });
    expect(await store.backlog('news')).toEqual({ news: { 'www.a.com': 2 } });
    expect(await store.backlog('nope')).toEqual({});
    expect(await store.deleteCrawl('news')).toBe(3);
    expect(await store.backlog()).toEqual({ DEFAULT: { 'b.org': 2 } });
  });

  test("a blacklisted domain's queues keep their URLs but are not served until the blacklist entry goes", async () => {
    const { store, clock } = open(partitions);
    await store.put(discovered('c', 'www.shop.com', pages('www.shop.com', 2)));
    await store.put(discovered('c', 'shop.com', ['http://shop.com/x']));
    await store.put(discovered('c', 'other.net', ['http://other.net/1']));
    await store.configureDomain('blacklist-update', 'shop.com');
    expect(await serveAll(store)).toEqual(['http://other.net/1']);
    expect((await store.backlog('c')).c).toMatchObject({ 'www.shop.com': 2, 'shop.com': 1 });

    await store.configureDomain('blacklist-remove', 'shop.com');
    clock.now += 2000;
    expect(await serveAll(store)).toEqual(['http://shop.com/x', 'http://www.shop.com/0', 'http://www.shop.com/1']);
  });

  test('a throttle override caps a queue at hits x scale URLs per window, for every crawl of that domain', async () => {
    const { store, clock } = open(partitions);
    await store.put(discovered('c1', 'www.slow.com', pages('www.slow.com', 10)));
    await store.put(discovered('c2', 'slow.com', pages('slow.com', 10)));
    await store.put(discovered('c1', 'fast.org', pages('fast.org', 10)));
    await store.configureDomain('domain-update', 'slow.com', { hits: 6, window: 30, scale: 0.5 });

    const served: { at: number; url: string }[] = [];
    for (let t = 0; t <= 95_000; t += 500) {
      clock.now = T0 + t;
      await store.getUrls({ maxQueues: 0, maxUrlsPerQueue: 0, holdSeconds: 3600 }, (urls) => {
        for (const u of urls) served.push({ at: clock.now, url: u.url });
      });
    }
    const slow = (prefix: string) => served.filter((s) => s.url.startsWith(prefix)).map((s) => s.at);
    for (const queue of ['http://www.slow.com/', 'http://slow.com/']) {
      const times = slow(queue);
      // 3 (6 x 0.5) at once, then the next 3 only once 30 s have passed: 3 at 0, 30.5 and 61 s, the last at 91.5 s.
      expect(times).toEqual([
        ...Array(3).fill(T0),
        ...Array(3).fill(T0 + 30_500),
        ...Array(3).fill(T0 + 61_000),
        T0 + 91_500,
      ]);
      for (const start of times)
        expect(times.filter((t) => t >= start && t < start + 30_000).length).toBeLessThanOrEqual(3);
    }
    // The other domain is not limited: all 10 in the first serve.
    expect(slow('http://fast.org/')).toEqual(Array(10).fill(T0));

    await store.configureDomain('domain-remove', 'slow.com');
    await store.put(discovered('c1', 'www.slow.com', pages('www.slow.com', 20).slice(10)));
    clock.now += 2000;
    expect((await serveAll(store)).filter((u) => u.startsWith('http://www.slow.com/'))).toHaveLength(10);
  });

  test('a queue of 1,200 URLs: one call serves SERVE_CAP, GetURLs serves it whole (continued), released whole when the holds end', async () => {
    const { store, clock } = open(partitions);
    const urls = pages('big.example.com', 1200);
    await store.put(discovered('c', 'big.example.com', urls));
    const getAll = async () => {
      const got: string[] = [];
      await store.getUrls(
        { crawl: 'c', key: 'big.example.com', maxUrlsPerQueue: 0, maxQueues: 0, holdSeconds: 60 },
        (served) => {
          for (const u of served) got.push(u.url);
        },
      );
      return got;
    };
    const first = await getAll();
    expect(first.map((u) => u).sort()).toEqual([...urls].sort());
    expect(await getAll()).toEqual([]);
    clock.now += 61_000;
    // One script call stops at SERVE_CAP, whatever the client asks (max 0: no limit), once the holds that ended are
    // released (GetURLs does it first).
    await store.releaseHolds(store.partitions);
    const one = (await store.serveQueues('c', ['big.example.com'], 0, 60))[0];
    expect(one).toHaveLength(SERVE_CAP);
    clock.now += 61_000;
    const again = await getAll();
    expect(again).toHaveLength(1200);
    expect(new Set(again).size).toBe(1200);
    expect(await store.backlog('c')).toEqual({ c: { 'big.example.com': 1200 } });
  });

  test('holds that ended go back to the schedule in pages, before GetURLs serves; the rest of the frontier is left', async () => {
    const { store, clock } = open(partitions);
    const n = 2 * SERVE_CAP + 500;
    const key = 'hold.example.com';
    await store.put(discovered('c', key, pages(key, n)));
    await store.put(discovered('c', 'later.example.com', ['http://later.example.com/1']));
    const get = async (k: string, hold: number) => {
      let served = 0;
      await store.getUrls({ crawl: 'c', key: k, maxUrlsPerQueue: 0, maxQueues: 0, holdSeconds: hold }, (urls) => {
        served += urls.length;
      });
      return served;
    };
    expect(await get(key, 60)).toBe(n);
    expect(await get('later.example.com', 300)).toBe(1);
    const q = urlFrontierQueueKeys(store.partitionOf(key), 'c', key);
    const info = async () => redis.hmget(q.info, 'held', `h:${'\u0001'}/0`);
    expect((await info())[0]).toBe(String(n));
    expect((await info())[1]).toMatch(/^\d+,\d+$/);
    clock.now += 61_000;
    // Released whole (within one GetURLs's budget), then served again up to SERVE_CAP per call, continued.
    expect(await get(key, 60)).toBe(n);
    expect(await store.backlog('c')).toEqual({ c: { [key]: n, 'later.example.com': 1 } });
    clock.now += 61_000;
    expect((await store.stats('c', key)).inProcess).toBe(0);
    expect(await redis.zcard(q.sched)).toBe(n);
    expect(await info()).toEqual(['0', null]);
    // The hold of the other queue has not ended: it is still in process, and not served again.
    expect((await store.stats('c', 'later.example.com')).inProcess).toBe(1);
    expect(await get('later.example.com', 300)).toBe(0);
  });

  test('two servers releasing the same ended holds at once release each once; completed ones are only dropped', async () => {
    const { store, clock } = open(partitions);
    const key = 'twice.example.com';
    const urls = pages(key, 1200);
    await store.put(discovered('c', key, urls));
    let served = 0;
    await store.getUrls({ crawl: 'c', key, maxUrlsPerQueue: 0, maxQueues: 0, holdSeconds: 60 }, (got) => {
      served += got.length;
    });
    expect(served).toBe(1200);
    await store.put(discovered('c', key, urls.slice(0, 100)).map((item) => ({ ...item, kind: 'known' as const })));
    clock.now += 61_000;
    const other = new UrlFrontierStore(redis, store.prefix, { now: () => clock.now, partitions });
    await Promise.all([store.releaseHolds(store.partitions), other.releaseHolds(other.partitions)]);
    const q = urlFrontierQueueKeys(store.partitionOf(key), 'c', key);
    expect(await redis.zcard(q.sched)).toBe(1100);
    expect(await redis.hget(q.info, 'held')).toBe('0');
    expect(await store.backlog('c')).toEqual({ c: { [key]: 1100 } });
    expect(await store.backlogTotal()).toBe(1100);
    const holds = urlFrontierGlobalKeys(store.partitionOf(key)).holds;
    expect(await redis.zcard(holds)).toBe(0);
  });

  test('a continued GetURLs stops at the client’s max per queue, and a domain override gets no continuation', async () => {
    const { store } = open(partitions);
    await store.put(discovered('c', 'max.example.com', pages('max.example.com', 2500)));
    await store.put(discovered('c', 'capped.example.net', pages('capped.example.net', 2500)));
    await store.configureDomain('domain-update', 'example.net', { hits: 5000, window: 1, scale: 1 });
    const count = async (key: string, max: number) => {
      let n = 0;
      await store.getUrls({ crawl: 'c', key, maxUrlsPerQueue: max, maxQueues: 0, holdSeconds: 60 }, (served) => {
        n += served.length;
      });
      return n;
    };
    expect(await count('max.example.com', 1500)).toBe(1500);
    // The override allows 5,000 per window, but one serve of it is one call: SERVE_CAP.
    expect(await count('capped.example.net', 0)).toBe(SERVE_CAP);
  });
});

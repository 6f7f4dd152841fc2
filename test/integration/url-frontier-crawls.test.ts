/**
 * The URL Frontier store over many crawls (issue 48, items 2 and 9), on the standalone and the cluster-mode Redis:
 * GetURLs over every crawl costs the same whatever the crawls that have nothing due (the `qdue` index), serves the
 * longest-due queue first across crawls, and the stats run's backlog total is one command, kept exact by every
 * script; a frontier stored before either index existed is walked once, a page at a time, and then served whole.
 */
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import type { RedisClient } from '../../lib/redis/client.ts';
import {
  urlFrontierCrawlKeys,
  urlFrontierGlobalKeys,
  urlFrontierQueueKeys,
} from '../../lib/redis/url-frontier/keys.ts';
import { type GetUrlsRequest, type PutItem, queueMember, urlMember } from '../../lib/redis/url-frontier/model.ts';
import { UrlFrontierStore } from '../../lib/redis/url-frontier/store.ts';
import { recordCommands } from '../helpers/scripts.ts';
import { clusterRedis, standaloneRedis, uniqueName } from '../helpers/services.ts';
import { dropStores, keysOfOnePartition } from '../helpers/url-frontier.ts';

const T0 = Date.UTC(2026, 10, 23, 12, 0, 0);

const item = (crawl: string, key: string, url: string, kind: 'discovered' | 'known', date = 0): PutItem => ({
  crawl,
  key,
  url,
  kind,
  date,
  metadata: {},
});

/** GetURLs over every crawl (no crawl in the request), each served URL as `crawl url`, in the order served. */
async function anyCrawl(store: UrlFrontierStore, over: Partial<GetUrlsRequest> = {}): Promise<string[]> {
  const out: string[] = [];
  await store.getUrls({ maxQueues: 0, maxUrlsPerQueue: 0, holdSeconds: 30, ...over }, (urls) => {
    for (const u of urls) out.push(`${u.crawl} ${u.url}`);
  });
  return out;
}

/** The backlog as the O(queues) read counts it, summed over every crawl and queue. */
async function countedBacklog(store: UrlFrontierStore): Promise<number> {
  let n = 0;
  for (const queues of Object.values(await store.backlog())) for (const v of Object.values(queues)) n += v;
  return n;
}

/** The `qdue` index (every crawl's due queues) of the partition that holds the queues with key `key`. */
function qdueOf(store: UrlFrontierStore, key: string): string {
  return urlFrontierGlobalKeys(store.partitionOf(key)).queueDue;
}

/**
 * What a frontier stored by an older version lacks: the due index over every crawl, the total, the counted flags.
 * Such a frontier is one partition (a partitioned frontier came after the indexes).
 */
async function asOlderFrontier(redis: RedisClient, store: UrlFrontierStore): Promise<void> {
  const g = urlFrontierGlobalKeys(store.partitions[0]);
  await redis.del(g.queueDue);
  // The index over crawls of the version before `qdue` (the walk deletes it).
  await redis.zadd(g.legacyCrawlDue, 0, 'any');
  await redis.hdel(g.state, 'indexed', 'backlog', 'icursor');
  for (const crawl of await store.crawls())
    for (const key of await store.queues(crawl))
      await redis.hdel(urlFrontierQueueKeys(store.partitions[0], crawl, key).info, 'counted');
}

/** A connection for the describe block that calls it, and its stores (of `partitions`), dropped after each test. */
function useStores(connect: () => RedisClient, partitions: number) {
  const redis = connect();
  const stores: UrlFrontierStore[] = [];
  afterEach(async () => {
    await dropStores(redis, stores.splice(0));
  });
  afterAll(() => redis.disconnect());
  const newStore = (now?: () => number): UrlFrontierStore => {
    const store = new UrlFrontierStore(redis, uniqueName('ufc'), { now, partitions });
    stores.push(store);
    return store;
  };
  return { redis, newStore };
}

describe.each([
  { name: 'standalone', connect: standaloneRedis, partitions: 1 },
  { name: 'cluster mode', connect: clusterRedis, partitions: 1 },
  { name: 'cluster mode', connect: clusterRedis, partitions: 6 },
])('URL Frontier store over many crawls ($name Redis, FRONTIER_PARTITIONS=$partitions)', ({ connect, partitions }) => {
  const { redis, newStore } = useStores(connect, partitions);

  /** `n` crawls of one queue and one URL each, all served and then completed: nothing in them is due, ever. */
  async function exhaustedCrawls(n: number): Promise<UrlFrontierStore> {
    const store = newStore();
    const crawls = Array.from({ length: n }, (_, i) => `crawl-${i}`);
    await store.put(crawls.map((c) => item(c, 'a.com', 'http://a.com/', 'discovered')));
    expect(await anyCrawl(store)).toHaveLength(n);
    await store.put(crawls.map((c) => item(c, 'a.com', 'http://a.com/', 'known', 0)));
    return store;
  }

  /** The commands of one empty GetURLs over every crawl, and the KEYS its script calls named. */
  async function emptyAnyCrawl(store: UrlFrontierStore): Promise<{ commands: number; keys: number }> {
    const sent = await recordCommands(redis, async () => expect(await anyCrawl(store, { maxQueues: 1 })).toEqual([]));
    const keys = sent.filter((c) => c.name === 'evalsha' || c.name === 'eval').map((c) => Number(c.args[1]));
    return { commands: sent.length, keys: keys.reduce((a, b) => a + b, 0) };
  }

  test('an empty GetURLs over every crawl sends as few commands over 2,000 exhausted crawls as over 20', async () => {
    const small = await emptyAnyCrawl(await exhaustedCrawls(20));
    const large = await emptyAnyCrawl(await exhaustedCrawls(2000));
    expect(large).toEqual(small);
    // The state (active, indexed), a look at each partition's ended holds (none), and one claim from the due index
    // over every crawl of each partition (none due): no crawl is looked at.
    expect(large).toEqual({ commands: 1 + 2 * partitions, keys: partitions });
  });

  test('the one due crawl among 2,000 exhausted ones is served by a claim and a serve', async () => {
    const store = await exhaustedCrawls(2000);
    await store.put([item('crawl-1234', 'due.com', 'http://due.com/x', 'discovered')]);
    let got: string[] = [];
    const sent = await recordCommands(redis, async () => {
      got = await anyCrawl(store);
    });
    expect(got).toEqual(['crawl-1234 http://due.com/x']);
    // HMGET state, a look at each partition's ended holds (none), a claim (1 queue), the serve, a claim (none left);
    // a claim (none) of each other partition.
    expect(sent.length).toBeLessThanOrEqual(4 + 2 * partitions - 1);
  });

  test('the longest-due queue goes first across crawls, not crawl by crawl (within a partition)', async () => {
    const clock = { now: T0 };
    const store = newStore(() => clock.now);
    const s = T0 / 1000;
    // Crawl a's queues are due at +1, +3, +5 s, crawl b's one queue at +2 s: a crawl with many queues due does not
    // starve another. All four queues in one partition (across partitions, GetURLs takes the partitions in turn).
    const [a1, a3, a5, b2] = keysOfOnePartition(partitions, 4, 'a') as [string, string, string, string];
    await store.put([
      item('a', a1, `http://${a1}/`, 'known', s + 1),
      item('a', a3, `http://${a3}/`, 'known', s + 3),
      item('a', a5, `http://${a5}/`, 'known', s + 5),
      item('b', b2, `http://${b2}/`, 'known', s + 2),
    ]);
    clock.now = T0 + 10_000;
    const order: string[] = [];
    for (let i = 0; i < 5; i++) order.push(...(await anyCrawl(store, { maxQueues: 1 })));
    expect(order).toEqual([`a http://${a1}/`, `b http://${b2}/`, `a http://${a3}/`, `a http://${a5}/`]);
  });

  test('held URLs of every crawl come back when their holds end, not before', async () => {
    const clock = { now: T0 };
    const store = newStore(() => clock.now);
    await store.put([
      item('x', 'x.com', 'http://x.com/1', 'discovered'),
      item('y', 'y.com', 'http://y.com/1', 'discovered'),
    ]);
    expect((await anyCrawl(store, { holdSeconds: 10 })).sort()).toEqual(['x http://x.com/1', 'y http://y.com/1']);
    clock.now += 9_999;
    expect(await anyCrawl(store)).toEqual([]);
    clock.now += 2;
    expect((await anyCrawl(store)).sort()).toEqual(['x http://x.com/1', 'y http://y.com/1']);
    // Completed while held: the crawl leaves the index, and the other one is served alone once its hold ends.
    await store.put([item('x', 'x.com', 'http://x.com/1', 'known', 0)]);
    expect(await redis.zscore(qdueOf(store, 'x.com'), queueMember('x', 'x.com'))).toBeNull();
    clock.now += 30_001;
    expect(await anyCrawl(store)).toEqual(['y http://y.com/1']);
  });

  test('a stale place in the index is mended by the next look; a crawl missing from it comes back when served by ID', async () => {
    const clock = { now: T0 };
    const store = newStore(() => clock.now);
    await store.put([item('w', 'w.com', 'http://w.com/1', 'known', T0 / 1000 + 600)]);
    // Too early (as an older server might leave it): nothing is served and the queue moves to its real time.
    await redis.zadd(qdueOf(store, 'w.com'), 0, queueMember('w', 'w.com'));
    expect(await anyCrawl(store)).toEqual([]);
    expect(Number(await redis.zscore(qdueOf(store, 'w.com'), queueMember('w', 'w.com')))).toBe(
      (T0 / 1000 + 600) * 1000,
    );
    // Missing: a GetURLs over every crawl does not see it, one naming it serves it and puts it back.
    await store.put([item('m', 'm.com', 'http://m.com/1', 'discovered')]);
    await redis.zrem(qdueOf(store, 'm.com'), queueMember('m', 'm.com'));
    expect(await anyCrawl(store)).toEqual([]);
    const named: string[] = [];
    await store.getUrls({ crawl: 'm', maxQueues: 0, maxUrlsPerQueue: 0, holdSeconds: 30 }, (u) => {
      named.push(...u.map((x) => x.url));
    });
    expect(named).toEqual(['http://m.com/1']);
    // Nothing left scheduled: out of the index until its hold ends and is released, then served over every crawl.
    expect(await redis.zscore(qdueOf(store, 'm.com'), queueMember('m', 'm.com'))).toBeNull();
    clock.now += 30_000;
    expect(await anyCrawl(store)).toEqual(['m http://m.com/1']);
  });

  test('queues with metadata or a crawl limit are served over every crawl like the others, with both kept', async () => {
    const store = newStore();
    await store.put([
      { ...item('m', 'm.com', 'http://m.com/1', 'discovered'), metadata: { d: ['1'] } },
      item('p', 'p.com', 'http://p.com/1', 'discovered'),
      item('l', 'l.com', 'http://l.com/done', 'known', 0),
      item('l', 'l.com', 'http://l.com/1', 'discovered'),
      item('l2', 'l.com', 'http://l.com/1', 'discovered'),
    ]);
    // Crawl l's queue is at its limit (one completed URL); crawl l2's is under it.
    expect(await store.setCrawlLimit('l', 'l.com', 1)).toBe(true);
    expect(await store.setCrawlLimit('l2', 'l.com', 1)).toBe(true);
    const served: string[] = [];
    await store.getUrls({ maxQueues: 0, maxUrlsPerQueue: 0, holdSeconds: 30 }, (urls) => {
      for (const u of urls) served.push(`${u.crawl} ${u.url} ${JSON.stringify(u.metadata)}`);
    });
    expect(served.sort()).toEqual(['l2 http://l.com/1 {}', 'm http://m.com/1 {"d":["1"]}', 'p http://p.com/1 {}']);
  });

  test('a deleted crawl leaves the index and the total; the others are served as before', async () => {
    const store = newStore();
    await store.put([
      item('gone', 'a.com', 'http://a.com/1', 'discovered'),
      item('gone', 'b.com', 'http://b.com/1', 'discovered'),
      item('kept', 'a.com', 'http://a.com/1', 'discovered'),
    ]);
    expect(await store.backlogTotal()).toBe(3);
    expect(await store.deleteCrawl('gone')).toBe(2);
    for (const key of ['a.com', 'b.com'])
      expect(await redis.zscore(qdueOf(store, key), queueMember('gone', key))).toBeNull();
    expect(await store.backlogTotal()).toBe(1);
    expect(await anyCrawl(store)).toEqual(['kept http://a.com/1']);
  });

  test('the backlog total is one command (per partition) and matches the per-queue count through put, serve, complete, purge, delete', async () => {
    const clock = { now: T0 };
    const store = newStore(() => clock.now);
    const check = async (expected: number) => {
      let total = -1;
      const sent = await recordCommands(redis, async () => {
        total = await store.backlogTotal();
      });
      expect(sent).toHaveLength(partitions);
      expect(total).toBe(expected);
      expect(await countedBacklog(store)).toBe(expected);
    };
    await store.put([
      item('c', 'a.com', 'http://a.com/1', 'discovered'),
      item('c', 'a.com', 'http://a.com/1', 'discovered'),
      item('c', 'a.com', 'http://a.com/2', 'discovered'),
      item('d', 'b.com', 'http://b.com/1', 'known', T0 / 1000 + 60),
      item('d', 'b.com', 'http://b.com/done', 'known', 0),
    ]);
    await check(3);
    // Held URLs stay in the backlog; a known update of a held URL releases it (still one).
    expect(await anyCrawl(store)).toHaveLength(2);
    await check(3);
    await store.put([item('c', 'a.com', 'http://a.com/1', 'known', T0 / 1000)]);
    await check(3);
    // Completed (held or scheduled) leave it; a completed URL scheduled again comes back.
    await store.put([
      item('c', 'a.com', 'http://a.com/1', 'known', 0),
      item('d', 'b.com', 'http://b.com/1', 'known', 0),
    ]);
    await check(1);
    await store.put([item('d', 'b.com', 'http://b.com/done', 'known', T0 / 1000)]);
    await check(2);
    clock.now += 1000;
    expect(await store.purge('c', undefined, 0)).toBe(2);
    await check(1);
    expect(await store.deleteQueue('d', 'b.com')).toBe(2);
    await check(0);
  });

  test("a crawl's index left behind by GetURLs over every crawl is corrected by a GetURLs of that crawl", async () => {
    const clock = { now: T0 };
    const store = newStore(() => clock.now);
    await store.put([
      item('a', 'a.com', 'http://a.com/1', 'discovered'),
      item('a', 'a.com', 'http://a.com/2', 'known', T0 / 1000 + 5),
    ]);
    expect(await anyCrawl(store)).toEqual(['a http://a.com/1']);
    // Over every crawl the queue is placed in `qdue` alone (at its next URL's date); its crawl's `due` keeps the
    // earlier time it had.
    const due = urlFrontierCrawlKeys(store.partitionOf('a.com'), 'a').due;
    expect(Number(await redis.zscore(qdueOf(store, 'a.com'), queueMember('a', 'a.com')))).toBe(T0 + 5000);
    expect(Number(await redis.zscore(due, 'a.com'))).toBeLessThanOrEqual(T0);
    // A GetURLs of the crawl takes that time from `qdue` instead of looking at the queue before it.
    const ofCrawl = async () => {
      const out: string[] = [];
      await store.getUrls({ crawl: 'a', maxQueues: 0, maxUrlsPerQueue: 0, holdSeconds: 30 }, (urls) => {
        for (const u of urls) out.push(u.url);
      });
      return out;
    };
    expect(await ofCrawl()).toEqual([]);
    expect(Number(await redis.zscore(due, 'a.com'))).toBe(T0 + 5000);
    clock.now = T0 + 5000;
    expect(await ofCrawl()).toEqual(['http://a.com/2']);
  });

  test('holds an older version kept in the queue are moved on its next serve: those not ended stay held', async () => {
    const clock = { now: T0 };
    const store = newStore(() => clock.now);
    const urls = ['http://o.com/1', 'http://o.com/2', 'http://o.com/3'];
    await store.put(urls.map((u) => item('o', 'o.com', u, 'discovered')));
    // As an older version left it: /1 held until T0 + 10 s, /2 until T0 + 100 s, in the queue's `held` and `hdate`.
    const q = urlFrontierQueueKeys(store.partitionOf('o.com'), 'o', 'o.com');
    const [m1, m2] = urls.map((u) => urlMember('o.com', u)) as [string, string];
    const date = String(T0 / 1000);
    await redis.zrem(q.sched, m1, m2);
    await redis.zadd(q.held, T0 + 10_000, m1, T0 + 100_000, m2);
    await redis.hset(q.hdate, m1, date, m2, date);
    await redis.hset(q.info, 'last', T0 - 5000);
    await redis.hdel(q.info, 'v');
    clock.now = T0 + 20_000;
    const served: string[] = [];
    await store.getUrls({ crawl: 'o', maxQueues: 0, maxUrlsPerQueue: 0, holdSeconds: 300 }, (got) => {
      for (const u of got) served.push(u.url);
    });
    expect(served.sort()).toEqual(['http://o.com/1', 'http://o.com/3']);
    expect(await redis.exists(q.held, q.hdate)).toBe(0);
    expect(await redis.hmget(q.info, 'v', 'held')).toEqual(['2', '3']);
    expect((await store.stats('o', 'o.com')).inProcess).toBe(3);
    expect((await store.urlStatus('o', 'o.com', 'http://o.com/2'))?.date).toBe(T0 / 1000);
    // /2's hold ends at T0 + 100 s, as the older version set it.
    clock.now = T0 + 99_000;
    expect(await anyCrawl(store)).toEqual([]);
    clock.now = T0 + 100_000;
    expect(await anyCrawl(store)).toEqual(['o http://o.com/2']);
    expect(await store.backlogTotal()).toBe(await countedBacklog(store));
  });
});

// A frontier stored by an older version is one partition: partitions came after the indexes.
describe.each([
  ['standalone', standaloneRedis],
  ['cluster mode', clusterRedis],
])('URL Frontier store stored by an older version (%s Redis)', (_name, connect) => {
  const { redis, newStore } = useStores(connect, 1);

  test('a frontier stored before the indexes is walked a page at a time, then served whole and counted exactly', async () => {
    const store = newStore();
    const crawls = Array.from({ length: 1200 }, (_, i) => `old-${i}`);
    await store.put(crawls.map((c) => item(c, 'a.com', `http://a.com/${c}`, 'discovered')));
    await asOlderFrontier(redis, store);
    // A new store, as a server of the new version starting on it.
    const upgraded = new UrlFrontierStore(redis, store.prefix);
    expect(await upgraded.index.step()).toBe(false);
    // A put mid-walk, into every crawl: walked queues count it at once, the others when the walk reaches them.
    await upgraded.put(crawls.map((c) => item(c, 'a.com', `http://a.com/${c}/2`, 'discovered')));
    let steps = 1;
    while (!(await upgraded.index.step())) steps++;
    expect(steps).toBeGreaterThan(1);
    expect(await upgraded.backlogTotal()).toBe(2400);
    expect(await countedBacklog(upgraded)).toBe(2400);
    expect(await redis.exists(urlFrontierGlobalKeys(store.partitions[0]).legacyCrawlDue)).toBe(0);
    const served = await anyCrawl(upgraded);
    expect(served).toHaveLength(2400);
    expect(new Set(served.map((s) => s.split(' ')[0])).size).toBe(1200);
  });

  test('a frontier indexed by crawls only (indexed 1, cdue) is walked again into the index of queues', async () => {
    const store = newStore();
    await store.put([
      item('p', 'a.com', 'http://a.com/1', 'discovered'),
      item('q', 'b.com', 'http://b.com/1', 'discovered'),
    ]);
    const g = urlFrontierGlobalKeys(store.partitions[0]);
    await redis.del(g.queueDue);
    await redis.zadd(g.legacyCrawlDue, 0, 'p', 0, 'q');
    await redis.hset(g.state, 'indexed', 1);
    const upgraded = new UrlFrontierStore(redis, store.prefix);
    expect((await anyCrawl(upgraded)).sort()).toEqual(['p http://a.com/1', 'q http://b.com/1']);
    expect(await redis.hget(g.state, 'indexed')).toBe('2');
    expect(await redis.exists(g.legacyCrawlDue)).toBe(0);
    expect(await upgraded.backlogTotal()).toBe(2);
  });

  test('GetURLs over every crawl of an older frontier walks it first and serves every crawl', async () => {
    const store = newStore();
    await store.put([
      item('p', 'a.com', 'http://a.com/1', 'discovered'),
      item('q', 'b.com', 'http://b.com/1', 'discovered'),
    ]);
    await asOlderFrontier(redis, store);
    const upgraded = new UrlFrontierStore(redis, store.prefix);
    expect((await anyCrawl(upgraded)).sort()).toEqual(['p http://a.com/1', 'q http://b.com/1']);
    expect(await redis.hget(urlFrontierGlobalKeys(store.partitions[0]).state, 'indexed')).toBe('2');
    expect(await upgraded.backlogTotal()).toBe(2);
  });
});

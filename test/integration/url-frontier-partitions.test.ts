/**
 * The URL Frontier store split into partitions (`FRONTIER_PARTITIONS`, lib/redis/url-frontier/keys.ts) on the 3-master
 * cluster-mode Redis of `services up`: where the partitions land, that GetURLs serves every partition (none starves
 * behind a busy one), that a PutURLs batch is one script call per partition, that the answers over partitions are the
 * ones a single partition gives, and that the frontier-wide settings hold in every partition.
 */
import type { Cluster } from 'ioredis';
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import {
  urlFrontierGlobalKeys,
  urlFrontierPartitions,
  urlFrontierQueueKeys,
  urlFrontierTag,
} from '../../lib/redis/url-frontier/keys.ts';
import type { GetUrlsRequest, PutItem } from '../../lib/redis/url-frontier/model.ts';
import { UrlFrontierStore } from '../../lib/redis/url-frontier/store.ts';
import { recordScriptCalls } from '../helpers/scripts.ts';
import { clusterRedis, uniqueName } from '../helpers/services.ts';
import { dropStores, keysPerPartition } from '../helpers/url-frontier.ts';

const redis = clusterRedis();
const stores: UrlFrontierStore[] = [];
afterEach(async () => {
  await dropStores(redis, stores.splice(0));
});
afterAll(() => redis.disconnect());

const T0 = Date.UTC(2026, 10, 23, 12, 0, 0);

function newStore(partitions: number, now?: () => number, prefix = uniqueName('ufp')): UrlFrontierStore {
  const store = new UrlFrontierStore(redis, prefix, { now, partitions });
  stores.push(store);
  return store;
}

const discovered = (crawl: string, key: string, url = `http://${key}/`): PutItem => ({
  crawl,
  key,
  url,
  kind: 'discovered',
  date: 0,
  metadata: {},
});

/** The master (host:port) that owns the slot of `key`. */
async function masterOf(key: string): Promise<string> {
  const slot = Number(await redis.call('CLUSTER', 'KEYSLOT', key));
  const ranges = (await redis.call('CLUSTER', 'SLOTS')) as [number, number, [string, number, ...unknown[]]][];
  const owner = ranges.find(([from, to]) => slot >= from && slot <= to);
  return owner ? `${owner[2][0]}:${owner[2][1]}` : 'none';
}

/** One GetURLs; the served queues as `crawl key`, in the order served. */
async function served(store: UrlFrontierStore, req: Partial<GetUrlsRequest> = {}): Promise<string[]> {
  const out: string[] = [];
  await store.getUrls({ maxQueues: 0, maxUrlsPerQueue: 0, holdSeconds: 600, ...req }, (urls) => {
    if (urls[0]) out.push(`${urls[0].crawl} ${urls[0].key}`);
  });
  return out;
}

describe('URL Frontier partitions: placement', () => {
  test('the cluster-mode Redis has three masters, and six partitions sit two on each', async () => {
    await redis.ping();
    expect((redis as Cluster).nodes('master')).toHaveLength(3);
    const tags = urlFrontierPartitions('placement', 6).map(urlFrontierTag);
    expect(new Set(tags).size).toBe(6);
    expect(tags[0]).toMatch(/^\{placement:uf:0\/6~\d+\}$/);
    const perMaster = new Map<string, number>();
    for (const tag of tags) {
      const m = await masterOf(`${tag}:state`);
      perMaster.set(m, (perMaster.get(m) ?? 0) + 1);
    }
    expect([...perMaster.values()]).toEqual([2, 2, 2]);
    // One partition keeps the one tag it had before partitions existed.
    expect(urlFrontierPartitions('placement', 1).map(urlFrontierTag)).toEqual(['{placement:uf}']);
  });

  test('a frontier of 600 queues over six partitions puts its queues on all three masters, evenly', async () => {
    const store = newStore(6);
    const keys = Array.from({ length: 600 }, (_, i) => `host-${i}.example.org`);
    await store.put(keys.map((k) => discovered('c', k)));
    const perMaster = new Map<string, number>();
    const perPartition = new Array(6).fill(0);
    for (const key of keys) {
      const p = store.partitionOf(key);
      perPartition[p.partition]++;
      // The queue's URLs are where its partition's tag puts them.
      const created = urlFrontierQueueKeys(p, 'c', key).created;
      expect(await redis.hlen(created)).toBe(1);
      const m = await masterOf(created);
      perMaster.set(m, (perMaster.get(m) ?? 0) + 1);
    }
    expect(perMaster.size).toBe(3);
    for (const n of perMaster.values()) expect(Math.abs(n - 200)).toBeLessThan(40);
    for (const n of perPartition) expect(Math.abs(n - 100)).toBeLessThan(30);
    expect(await store.queues('c')).toHaveLength(600);
  });
});

describe('URL Frontier partitions: GetURLs serves every partition', () => {
  test('a busy partition does not starve the others: each GetURLs starts one partition further on', async () => {
    const store = newStore(6, () => T0);
    // Partition 0 has 120 queues due, every other partition 5.
    const keys = keysPerPartition(6, 120);
    const items = keys.flatMap((ks, p) => (p === 0 ? ks : ks.slice(0, 5)).map((k) => discovered('c', k)));
    await store.put(items);
    const partitionOf = (queue: string) => store.partitionOf(queue.split(' ')[1] as string).partition;
    // Six GetURLs of 5 queues: every partition first once, so each call's queues come from a different partition.
    const firsts: number[] = [];
    for (let i = 0; i < 6; i++) {
      const got = await served(store, { maxQueues: 5 });
      expect(got).toHaveLength(5);
      const parts = new Set(got.map(partitionOf));
      expect(parts.size).toBe(1);
      firsts.push([...parts][0] as number);
    }
    expect(firsts.sort()).toEqual([0, 1, 2, 3, 4, 5]);
    // Without a bound, one GetURLs takes every partition's due queues: the rest of the busy one's.
    const rest = await served(store);
    expect(rest).toHaveLength(115);
    expect(new Set(rest.map(partitionOf))).toEqual(new Set([0]));
    expect(await served(store)).toEqual([]);
  });

  test('a GetURLs that one partition cannot fill takes the rest from the next ones, for a crawl or every crawl', async () => {
    const store = newStore(6, () => T0);
    const keys = keysPerPartition(6, 2);
    await store.put(keys.flatMap(([a, b]) => [discovered('x', a as string), discovered('y', b as string)]));
    const one = await served(store, { crawl: 'x', maxQueues: 4 });
    expect(one).toHaveLength(4);
    expect(new Set(one.map((q) => store.partitionOf(q.split(' ')[1] as string).partition)).size).toBe(4);
    // The rest of crawl x (2 queues), then all of crawl y (6) over every crawl.
    expect(await served(store, { crawl: 'x' })).toHaveLength(2);
    const any = await served(store);
    expect(any.every((q) => q.startsWith('y '))).toBe(true);
    expect(any).toHaveLength(6);
  });
});

describe('URL Frontier partitions: one script call per partition, answers as one partition gives them', () => {
  test('a PutURLs batch over 60 queues is one uf-put call per partition, each in its own slot', async () => {
    const store = newStore(6);
    const keys = keysPerPartition(6, 10).flat();
    const calls = await recordScriptCalls(redis, () => store.put(keys.map((k) => discovered('c', k))));
    expect(calls.map((c) => c.script)).toEqual(Array(6).fill('uf-put'));
    const tags = new Set<string>();
    for (const { keys: k } of calls) {
      const slots = new Set(await Promise.all(k.map(async (key) => Number(await redis.cluster('KEYSLOT', key)))));
      expect(slots.size).toBe(1);
      tags.add(k[0]?.slice(0, (k[0]?.indexOf('}') ?? 0) + 1) as string);
    }
    expect(tags).toEqual(new Set(store.partitions.map(urlFrontierTag)));
  });

  test('ListCrawls, ListQueues pages, GetStats, CountURLs, ListURLs and the backlog over six partitions equal one partition’s', async () => {
    const clock = { now: T0 };
    const one = newStore(1, () => clock.now);
    const six = newStore(6, () => clock.now);
    // Keys that Redis and JavaScript order differently (a code point past U+FFFF against U+FF5A), and plenty of plain
    // ones, over three crawls; some URLs completed, some blocked queues, one queue with a limit.
    const odd = ['\u{1F600}.test', '\uFF5A.test', '\u00E9.test', 'Z.test', 'a.test'];
    const plain = Array.from({ length: 40 }, (_, i) => `k${i}.example.net`);
    const items: PutItem[] = [];
    for (const crawl of ['c1', 'c2', 'DEFAULT'])
      for (const [i, key] of [...odd, ...plain].entries()) {
        if ((i + crawl.length) % 3 === 0) continue;
        items.push(discovered(crawl, key, `http://${key}/1`), discovered(crawl, key, `http://${key}/2`));
        if (i % 4 === 0) items.push({ ...discovered(crawl, key, `http://${key}/done`), kind: 'known', date: 0 });
      }
    for (const s of [one, six]) {
      expect(await s.put(items)).toEqual(Array(items.length).fill('OK'));
      await s.blockQueueUntil('c1', 'k3.example.net', T0 / 1000 + 3600);
      await s.blockQueueUntil('c1', '\u{1F600}.test', T0 / 1000 + 3600);
      expect(await s.setCrawlLimit('c2', 'k7.example.net', 1)).toBe(true);
    }
    // Some URLs held (of a queue named by key: over due queues, GetURLs takes the partitions in turn).
    for (const s of [one, six])
      await s.getUrls(
        { crawl: 'c2', key: 'k6.example.net', maxQueues: 0, maxUrlsPerQueue: 1, holdSeconds: 60 },
        () => {},
      );
    const answers = async (s: UrlFrontierStore) => {
      const out: Record<string, unknown> = {
        crawls: await s.crawls(),
        backlog: await s.backlog(),
        total: await s.backlogTotal(),
      };
      for (const crawl of ['c1', 'c2', 'DEFAULT', 'none']) {
        const pages: string[][] = [];
        for (let start = 0; start < 60; start += 7) pages.push(await s.listQueues(crawl, start, 7, false));
        out[`${crawl} active pages`] = pages;
        out[`${crawl} all`] = await s.listQueues(crawl, 0, 1000, true);
        out[`${crawl} stats`] = await s.stats(crawl);
        out[`${crawl} count`] = await s.countUrls(crawl, undefined);
        out[`${crawl} count /2`] = await s.countUrls(crawl, undefined, (u) => u.endsWith('/2'));
        const urls: string[] = [];
        await s.listUrls(crawl, undefined, 3, 50, undefined, (r) => {
          urls.push(`${r.key} ${r.url} ${r.date}`);
        });
        out[`${crawl} urls`] = urls;
      }
      return out;
    };
    const expected = await answers(one);
    expect(await answers(six)).toEqual(expected);
    // Redis's order: by UTF-8 bytes.
    const all = expected['c1 all'] as string[];
    expect(all).toEqual([...all].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
    expect(all.indexOf('\uFF5A.test')).toBeLessThan(all.indexOf('\u{1F600}.test'));
    // The six partitions were all used.
    expect(new Set(all.map((k) => six.partitionOf(k).partition)).size).toBe(6);
    // DeleteCrawl over every partition.
    const deleted = [await one.deleteCrawl('c1'), await six.deleteCrawl('c1')];
    expect(deleted[1]).toBe(deleted[0]);
    expect(await six.crawls()).toEqual(['DEFAULT', 'c2']);
    expect(await six.queues('c1')).toEqual([]);
  });
});

describe('URL Frontier partitions: the frontier-wide settings hold in every partition', () => {
  test('SetActive, the default delay, a blacklist and a domain override are written to every partition', async () => {
    const clock = { now: T0 };
    const store = newStore(6, () => clock.now);
    // Hosts of one domain in every partition (a queue's partition is its key's, not its domain's).
    const keys = keysPerPartition(6, 1, (i) => `h${i}.shop.com`).flat();
    await store.put(keys.flatMap((k) => [discovered('c', k, `http://${k}/1`), discovered('c', k, `http://${k}/2`)]));
    const states = () => Promise.all(store.partitions.map((p) => redis.hgetall(urlFrontierGlobalKeys(p).state)));

    await store.setActive(false);
    for (const state of await states()) expect(state.active).toBe('0');
    expect(await store.active()).toBe(false);
    expect(await served(store)).toEqual([]);
    await store.setActive(true);
    expect(await store.active()).toBe(true);

    await store.configureDomain('blacklist-update', 'shop.com');
    for (const p of store.partitions)
      expect(await redis.sismember(urlFrontierGlobalKeys(p).blacklist, 'shop.com')).toBe(1);
    expect(await served(store)).toEqual([]);
    await store.configureDomain('blacklist-remove', 'shop.com');
    // A domain override of one URL per serve and 30 s between serves, in every partition.
    await store.configureDomain('domain-update', 'shop.com', { hits: 1, window: 30, scale: 1 });
    await store.setDelay('c', '', 0);
    for (const state of await states()) expect(state.delay).toBe('0');
    clock.now += 1000;
    expect((await served(store)).sort()).toEqual(keys.map((k) => `c ${k}`).sort());
    clock.now += 10_000;
    expect(await served(store)).toEqual([]);
    await store.configureDomain('domain-remove', 'shop.com');
    for (const p of store.partitions) expect(await redis.exists(urlFrontierGlobalKeys(p).domainConfig)).toBe(0);
    clock.now += 21_000;
    expect(await served(store)).toHaveLength(keys.length);
  });
});

/**
 * A crawl with the frontier split into six partitions (`FRONTIER_PARTITIONS=6`) on the three-master cluster-mode
 * Redis of `services up`: two per shard. The crawler workers lease from every partition, children cross partitions,
 * and the crawl completes once with exact totals, which `info` sums over the partitions too.
 */
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { frontierOptions } from '../../lib/redis/frontier-options.ts';
import { partitionKeys, partitionTag, spiderPartitions } from '../../lib/redis/keys.ts';
import { type FixtureSite, startSite } from '../../localstack/site/site.ts';
import { completeNotice, crawlPages, type E2eCluster, startE2eCluster } from '../helpers/cluster.ts';
import { clusterRedis, waitUntil } from '../helpers/services.ts';

const HOSTS = Array.from({ length: 30 }, (_, i) => `part-${i}.test`);

let site: FixtureSite;
let t: E2eCluster;

beforeAll(async () => {
  site = await startSite({ pages: 1500, links: 30, hosts: HOSTS, pageBytes: 500 });
  t = await startE2eCluster(
    { RETRY_BASE_DELAY_MS: 100, CRAWLER_CONCURRENCY: 16, FRONTIER_PARTITIONS: 6 },
    { site, crawlerWorkers: 2 },
  );
});
afterAll(async () => {
  await t?.stop();
  await site?.close();
});

test('a crawl over six partitions on three shards completes once, every page once, every link followed, totals exact', {
  timeout: 300_000,
}, async () => {
  expect(t.vars).toMatchObject({ REDIS_CLUSTER: true, FRONTIER_PARTITIONS: 6 });
  await t.feed([{ url: site.url(0), appid: 'e2e', crawlid: 'parts', maxdepth: 3 }]);
  const done = await completeNotice(t.outbound, 'parts', 240_000);
  const total = Number(done.total_pages);
  await waitUntil('every page the notice counts', () => crawlPages(t.pages, 'parts').length >= total, 30_000);
  const pages = crawlPages(t.pages, 'parts');
  const got = new Set(pages.map((m) => m.url as string));
  expect(got.size).toBe(pages.length);
  expect(done).toMatchObject({ total_pages: got.size, total_failed: 0 });
  // Which pages a depth-limited crawl reaches depends on the order it finds them in (a page first found by a longer
  // path is not read for links at maxdepth), and six partitions lease in no global order. So: every page within two
  // links is crawled, nothing past three, and every link of a page crawled below maxdepth was crawled too.
  const url = (n: number) => site.url(n);
  for (const n of site.reachable(0, 2)) expect(got.has(url(n)), url(n)).toBe(true);
  const within = new Set([...site.reachable(0, 3)].map(url));
  for (const u of got) expect(within.has(u), u).toBe(true);
  const onSite = new Set(Array.from({ length: 1500 }, (_, n) => url(n)));
  for (const m of pages) {
    if ((m.depth as number) >= 3) continue;
    for (const link of m.links as { url: string }[])
      if (onSite.has(link.url)) expect(got.has(link.url), `${link.url} (linked from ${m.url})`).toBe(true);
  }
  expect(got.size).toBeGreaterThan(1000);
  // One notice: the partitions that emptied last did not both announce it.
  await new Promise((r) => setTimeout(r, 1000));
  const notices = t.outbound.messages.filter((m) => m.action === 'complete' && m.crawlid === 'parts');
  expect(notices).toHaveLength(1);

  // The crawl's records live in every partition, and the partitions sit two on each master.
  const redis = clusterRedis();
  try {
    await redis.ping();
    const masters = new Map<string, number>();
    const ps = spiderPartitions(t.vars.REDIS_KEY_PREFIX, 'link', t.vars.SCHEDULER_TYPE_ENABLED, 6);
    let withCrawl = 0;
    for (const p of ps) {
      if ((await redis.hlen(partitionKeys(p).crawlRefs)) > 0) withCrawl++;
      const slot = Number(await redis.call('CLUSTER', 'KEYSLOT', partitionTag(p)));
      const node = (redis as Cluster).slots[slot]?.[0] ?? 'none';
      masters.set(node, (masters.get(node) ?? 0) + 1);
    }
    expect(withCrawl).toBe(6);
    expect([...masters.values()]).toEqual([2, 2, 2]);
  } finally {
    redis.disconnect();
  }
  expect(frontierOptions(t.vars).partitions).toBe(6);
});

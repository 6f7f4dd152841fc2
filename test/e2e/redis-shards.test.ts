/**
 * A crawl on a Redis Cluster of three masters (the cluster-mode Redis of `services up`): the frontier's partitions,
 * the stats and the crawl records live on different shards, and the crawler workers call them all at once. Before
 * scripts were kept out of ioredis's auto-pipelines, calls of two shards shared a pipeline and failed, and a crawl
 * of 3,000 pages over 50 hosts completed with about a third of them.
 */
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { type FixtureSite, startSite } from '../../localstack/site/site.ts';
import { completeNotice, crawlPages, type E2eCluster, startE2eCluster } from '../helpers/cluster.ts';
import { clusterRedis, waitUntil } from '../helpers/services.ts';

const HOSTS = Array.from({ length: 50 }, (_, i) => `shard-${i}.test`);

let site: FixtureSite;
let t: E2eCluster;

beforeAll(async () => {
  site = await startSite({ pages: 3000, links: 60, hosts: HOSTS, pageBytes: 500 });
  t = await startE2eCluster({ RETRY_BASE_DELAY_MS: 100, CRAWLER_CONCURRENCY: 16 }, { site, crawlerWorkers: 2 });
});
afterAll(async () => {
  await t?.stop();
  await site?.close();
});

test('the cluster-mode Redis has three masters', async () => {
  const redis = clusterRedis();
  try {
    await redis.ping();
    expect((redis as Cluster).nodes('master')).toHaveLength(3);
  } finally {
    redis.disconnect();
  }
});

test('a crawl over 50 hosts on three shards completes with every page, each once', { timeout: 300_000 }, async () => {
  expect(t.vars.REDIS_CLUSTER).toBe(true);
  const expected = [...site.reachable(0, 3)].map((n) => site.url(n)).sort();
  expect(expected.length).toBe(3000);
  await t.feed([{ url: site.url(0), appid: 'e2e', crawlid: 'shards', maxdepth: 3 }]);
  const done = await completeNotice(t.outbound, 'shards', 240_000);
  await waitUntil('every page', () => crawlPages(t.pages, 'shards').length >= expected.length, 30_000);
  const got = crawlPages(t.pages, 'shards').map((m) => m.url as string);
  expect(new Set(got).size).toBe(got.length);
  expect([...got].sort()).toEqual(expected);
  expect(done).toMatchObject({ total_pages: expected.length, total_failed: 0 });
});

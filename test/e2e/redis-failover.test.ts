/**
 * A failover drill: a crawl on 6 frontier partitions over a Redis Cluster of three masters, each with a replica (a
 * cluster of the test's own, never the shared one of `services up`), loses a master to SIGKILL a fifth of the way in.
 * Its replica takes over its slots, and the crawl completes with every page, exact totals and at most 1 % of pages
 * published twice. The test prints what it measured: the time to the promotion, the longest time no page arrived,
 * the pages published twice.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { type FixtureSite, startSite } from '../../localstack/site/site.ts';
import { completeNotice, crawlPages, type E2eCluster, startE2eCluster } from '../helpers/cluster.ts';
import {
  type ClusterNode,
  clusterNodes,
  onNode,
  type PrivateRedisCluster,
  startPrivateRedisCluster,
} from '../helpers/private-redis-cluster.ts';
import { waitUntil } from '../helpers/services.ts';

const HOSTS = Array.from({ length: 30 }, (_, i) => `failover-${i}.test`);
/** How long a master may be silent before its replica takes over (redis.conf `cluster-node-timeout`). */
const NODE_TIMEOUT_MS = 2000;

let site: FixtureSite;
let redis: PrivateRedisCluster;
let t: E2eCluster;

beforeAll(async () => {
  site = await startSite({ pages: 2000, links: 40, hosts: HOSTS, pageBytes: 500, latencyMs: 5 });
  redis = await startPrivateRedisCluster({ replicas: 1, nodeTimeoutMs: NODE_TIMEOUT_MS });
  t = await startE2eCluster(
    { REDIS_PORT: redis.port, FRONTIER_PARTITIONS: 6, RETRY_BASE_DELAY_MS: 100, CRAWLER_CONCURRENCY: 8 },
    { site, crawlerWorkers: 2 },
  );
});
afterAll(async () => {
  await t?.stop();
  await redis?.stop();
  await site?.close();
});

/** The longest time (ms) from `from` on during which the page count did not grow. */
function longestGap(arrivals: readonly { atMs: number; pages: number }[], from: number): number {
  let longest = 0;
  let grewAt = from;
  let pages = arrivals.find((a) => a.atMs >= from)?.pages ?? 0;
  for (const a of arrivals) {
    if (a.atMs < from || a.pages <= pages) continue;
    longest = Math.max(longest, a.atMs - grewAt);
    grewAt = a.atMs;
    pages = a.pages;
  }
  return longest;
}

/** The node on `port` as a surviving node sees it. */
async function seenFrom(survivor: number, port: number): Promise<ClusterNode | undefined> {
  return (await clusterNodes(survivor)).find((n) => n.port === port);
}

test('a master killed mid-crawl fails over to its replica and the crawl completes with every page', {
  timeout: 110_000,
}, async () => {
  expect(t.vars).toMatchObject({ REDIS_CLUSTER: true, REDIS_PORT: redis.port, FRONTIER_PARTITIONS: 6 });
  const expected = [...site.reachable(0, 3)].map((n) => site.url(n)).sort();
  expect(expected.length).toBe(2000);
  const [victim, survivor, , replica] = redis.ports as [number, number, number, number];
  expect((await seenFrom(survivor, replica))?.masterId).toBe((await seenFrom(survivor, victim))?.id);

  // Page arrivals over time, for the stall the failover causes.
  const arrivals: { atMs: number; pages: number }[] = [];
  const sampler = setInterval(() => arrivals.push({ atMs: Date.now(), pages: t.pages.messages.length }), 50);
  try {
    await t.feed([{ url: site.url(0), appid: 'e2e', crawlid: 'failover', maxdepth: 3 }]);
    await waitUntil('a fifth of the pages', () => crawlPages(t.pages, 'failover').length >= 400, 60_000);

    const killedAt = Date.now();
    const pagesAtKill = crawlPages(t.pages, 'failover').length;
    await redis.kill(victim);
    await waitUntil(
      'the replica to take over the killed master’s slots',
      async () => {
        const node = await seenFrom(survivor, replica);
        return node?.role === 'master' && node.slots > 0;
      },
      30_000,
    );
    const promotedAt = Date.now();
    await waitUntil(
      'the cluster to be ok again',
      async () => (await onNode(survivor, (n) => n.cluster('INFO') as Promise<string>)).includes('cluster_state:ok'),
      10_000,
    );

    // Well within LEASE_TIMEOUT (120 s): a lease held by no one would hold the crawl until reclaimed.
    const done = await completeNotice(t.outbound, 'failover', 90_000);
    await waitUntil('every page', () => crawlPages(t.pages, 'failover').length >= expected.length, 30_000);
    const got = crawlPages(t.pages, 'failover').map((m) => m.url as string);
    const twice = got.length - new Set(got).size;
    const stallMs = longestGap(arrivals, killedAt);
    process.stderr.write(
      `[failover] killed at page ${pagesAtKill}/${expected.length}; replica promoted after ${promotedAt - killedAt} ms; ` +
        `longest stall after the kill ${stallMs} ms; pages published twice: ${twice}; ` +
        `complete ${done.total_pages}/${done.total_failed}\n`,
    );

    expect([...new Set(got)].sort()).toEqual(expected);
    expect(twice).toBeLessThanOrEqual(expected.length / 100);
    expect(done).toMatchObject({ total_pages: expected.length, total_failed: 0 });
  } finally {
    clearInterval(sampler);
  }
});

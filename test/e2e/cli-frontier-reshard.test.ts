/**
 * `crawl-cluster frontier reshard` as an operator runs it: the real CLI in a child process against the cluster-mode
 * Redis, over a frontier and a URL frontier of one partition that a test frontier and a URL Frontier store filled
 * (lib/redis/reshard.ts does the move; the integration tests test/integration/frontier-reshard.test.ts and
 * url-frontier-reshard.test.ts check what it moves).
 */
import { describe, expect, test } from 'vitest';
import { config } from '../../lib/config/index.ts';
import { reshardKey } from '../../lib/redis/keys.ts';
import type { PutItem } from '../../lib/redis/url-frontier/model.ts';
import { UrlFrontierStore } from '../../lib/redis/url-frontier/store.ts';
import { runCli } from '../helpers/cli.ts';
import { childCrawl, frontierTestRedis, queueRequest, seedCrawl, testFrontier } from '../helpers/frontier.ts';
import { uniqueName } from '../helpers/services.ts';
import { dropStores } from '../helpers/url-frontier.ts';

const redis = frontierTestRedis();
const vars = config();

const SPIDER = 'link';

/** The environment of an operator's shell pointed at the test's frontier, which runs with one partition. */
function env(prefix: string): Record<string, string> {
  return {
    REDIS_HOST: '127.0.0.1',
    REDIS_PORT: String(vars.CRAWL_REDIS_CLUSTER_PORT),
    REDIS_CLUSTER: 'true',
    REDIS_KEY_PREFIX: prefix,
    FRONTIER_PARTITIONS: '1',
    LEASE_TIMEOUT: '60',
  };
}

describe('crawl-cluster frontier reshard', () => {
  test('refuses while a crawler holds a lease, saying what to do; moves everything once it is given back', async () => {
    const prefix = uniqueName();
    const f1 = testFrontier(redis, { prefix, partitions: 1 });
    const crawl = seedCrawl('app', 'r');
    const urls = Array.from({ length: 20 }, (_, k) => `http://site${k % 8}.com/${k}`);
    const outcomes = await f1.enqueue(
      SPIDER,
      urls.map((url, i) => ({ crawl: i === 0 ? crawl : childCrawl(crawl), request: queueRequest(url) })),
    );
    expect(new Set(outcomes)).toEqual(new Set(['queued']));
    const { leases } = await f1.leaseMany(SPIDER, 1);
    expect(leases).toHaveLength(1);

    const refused = await runCli(['frontier', 'reshard', '--to', '6'], env(prefix));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      'error: 1 request is leased: crawlers are at work (or stopped less than LEASE_TIMEOUT = 60 s ago). Stop the ' +
        'crawlers and the monitors first, or wait LEASE_TIMEOUT for their leases to expire, then run this again ' +
        '(nothing was moved)\n',
    );
    expect(refused.stdout).toBe('');

    await f1.release(leases);
    // A URL frontier under the same prefix: 2 crawls of 6 queues, 18 URLs, one completed, two held.
    const uf1 = new UrlFrontierStore(redis, prefix);
    const items: PutItem[] = ['a', 'b'].flatMap((crawl) =>
      Array.from({ length: 9 }, (_, k) => {
        const key = `host${k % 6}.test`;
        return { crawl, key, url: `http://${key}/${crawl}/${k}`, kind: 'discovered' as const, date: 0, metadata: {} };
      }),
    );
    await uf1.put([...items, { ...(items[0] as PutItem), kind: 'known', date: 0 }]);
    await uf1.getUrls({ crawl: 'b', key: 'host1.test', maxQueues: 0, maxUrlsPerQueue: 2, holdSeconds: 600 }, () => {});
    const moved = await runCli(['frontier', 'reshard', '--to', '6'], env(prefix));
    expect(moved.stderr).toBe('');
    expect(moved.code).toBe(0);
    expect(moved.stdout).toMatch(/^moved the frontier from 1 to 6 partitions per scope in \d+\.\d s/);
    expect(moved.stdout).toContain('  spider types: link\n');
    expect(moved.stdout).toContain('  requests: 20 queued, 0 delayed retries; 0 of stopped crawls dropped\n');
    expect(moved.stdout).toContain('  crawls: 1 (each registered in every partition), dupefilter fingerprints: 20\n');
    expect(moved.stdout).toMatch(
      /\n {2}URL Frontier: 12 queues of 2 crawls, 18 URLs \(2 held, 1 completed\) \([\d,]+ queues\/s, [\d,]+ URLs\/s\); domain overrides: 0, blacklisted domains: 0\n/,
    );
    expect(moved.stdout).toContain(
      'Now set FRONTIER_PARTITIONS=6 everywhere (crawlers, monitors, functions, the REST API, URL Frontier servers), ' +
        'then start them again.\n',
    );
    const uf6 = new UrlFrontierStore(redis, prefix, { partitions: 6 });
    expect(await uf6.crawls()).toEqual(['a', 'b']);
    expect(await uf6.countUrls('a', undefined)).toBe(9);
    expect((await uf6.stats('b')).inProcess).toBe(2);
    await dropStores(redis, [uf1, uf6]);

    // The move scheduled each domain by the CLI's throttle (QUEUE_HITS per QUEUE_WINDOW, the defaults): the domain of
    // the lease given back waits out its spacing; a minute later every domain is due.
    const f6 = testFrontier(redis, { prefix, partitions: 6 });
    const { leases: all } = await f6.leaseMany(SPIDER, 100, { now: Date.now() + 60_000 });
    expect(all.map((l) => l.url).sort()).toEqual([...urls].sort());

    // Run again with the new count in the environment: nothing left to move.
    const again = await runCli(['frontier', 'reshard', '--to', '6'], { ...env(prefix), FRONTIER_PARTITIONS: '6' });
    expect(again.code).toBe(0);
    expect(again.stdout).toBe('the frontier has 6 partitions per scope already: nothing to move\n');
  });

  test('--json: one summary document, with the part of the URL Frontier store', async () => {
    const prefix = uniqueName();
    const uf1 = new UrlFrontierStore(redis, prefix);
    await uf1.put(
      ['x.test', 'y.test', 'z.test'].map((key) => ({
        crawl: 'c',
        key,
        url: `https://${key}/`,
        kind: 'discovered',
        date: 0,
        metadata: { k: ['v'] },
      })),
    );
    await uf1.configureDomain('blacklist-update', 'y.test');
    const run = await runCli(['--json', 'frontier', 'reshard', '--to', '3'], env(prefix));
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const summary = JSON.parse(run.stdout);
    expect(summary).toMatchObject({
      from: 1,
      to: 3,
      queued: 0,
      resumed: false,
      urlFrontier: { plan: 'move', crawls: 1, queues: 3, urls: 3, held: 0, completed: 0, present: 0, blacklisted: 1 },
    });
    const uf3 = new UrlFrontierStore(redis, prefix, { partitions: 3 });
    expect(await uf3.queues('c')).toEqual(['x.test', 'y.test', 'z.test']);
    expect(await redis.exists(reshardKey(prefix))).toBe(0);
    await dropStores(redis, [uf1, uf3]);
  });
});

/**
 * "Why is it slow?" (issue 42 item 4), as a user sees it: `crawl`'s progress line says when its pending pages wait on
 * the domain throttle or for a retry. The real CLI in a child process against a local cluster with one crawler worker
 * and a throttle of one page per 60 s per domain, crawling the fixture site on loopback (two host names, two domains).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FixtureSite, startSite } from '../../localstack/site/site.ts';
import { clusterEnv, runCli } from '../helpers/cli.ts';
import { startE2eCluster, type TestCluster } from '../helpers/cluster.ts';

const APPID = 'cli-waits-e2e';

describe('crawl on a cluster throttling each domain to one page a minute', () => {
  let site: FixtureSite;
  let t: TestCluster;
  let env: Record<string, string>;

  beforeAll(async () => {
    site = await startSite({ pages: 20, links: 3, hosts: ['site-a.test', 'site-b.test'] });
    t = await startE2eCluster({ QUEUE_HITS: 1, QUEUE_WINDOW: 60, RETRY_BASE_DELAY_MS: 30_000 }, { site });
    env = clusterEnv(t.vars);
  });
  afterAll(async () => {
    await t?.stop();
    await site?.close();
  });

  // First: site-b.test has not been fetched yet, so the page is fetched at once and fails.
  it('says a page that failed with HTTP 500 waits for a retry, with its attempt and when', async () => {
    const broken = `http://site-b.test:${site.port}/always-500`;

    const run = await runCli(['crawl', broken, '--appid', APPID, '--crawlid', 'retrying', '--timeout', '9'], env);

    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/pending 1, .*; 1 page waits for a retry \(attempt 2, next in [\d.]+ s\)/);
  });

  it('says pending pages wait on the domain throttle, for how many domains and until when', async () => {
    const run = await runCli(
      ['crawl', site.url(0), '--depth', '1', '--appid', APPID, '--crawlid', 'throttled', '--timeout', '9'],
      env,
    );

    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/pending [1-9]\d*, .*waiting on the domain throttle \(\d domains?, next in [\d.]+ s\)/);
  });
});

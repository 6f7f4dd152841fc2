/**
 * What the CLI says when things go wrong (issue 34 items 2 and 3), as a user runs it: the real CLI in a child process
 * against a local cluster started in this process (the real handlers, one crawler worker, fresh prefixes) that crawls
 * the fixture site on loopback, whose robots.txt disallows /private/ (so a page there fails at once, unretried).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FixtureSite, startSite } from '../../localstack/site/site.ts';
import { clusterEnv, runCli } from '../helpers/cli.ts';
import { startE2eCluster, type TestCluster } from '../helpers/cluster.ts';

const APPID = 'cli-fail-e2e';
const DENIED = 'robots.txt disallows this URL';

/** A TCP server on a free loopback port: a port another program holds. */
async function holdPort(): Promise<{ server: Server; port: number }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { server, port: address.port };
}

describe('the CLI beside a running cluster with one crawler worker', () => {
  let site: FixtureSite;
  let t: TestCluster;
  let env: Record<string, string>;
  let held: { server: Server; port: number };
  const denied = () => `${new URL(site.url(0)).origin}/private/one`;

  beforeAll(async () => {
    site = await startSite({ pages: 20, links: 3 });
    t = await startE2eCluster({}, { site });
    env = clusterEnv(t.vars);
    held = await holdPort();
  });
  afterAll(async () => {
    held?.server.close();
    await t?.stop();
    await site?.close();
  });

  it('crawl shows a failed page and its reason as it comes and in the summary, and exits 1 when every page failed', async () => {
    const run = await runCli(['crawl', denied(), '--appid', APPID, '--crawlid', 'all-failed'], env);

    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`failed ${denied()}: ${DENIED}`);
    expect(run.stdout).toContain('crawl all-failed complete, but every page failed: 0 pages, 1 failed in ');
    expect(run.stdout).toContain(`failed pages by reason:\n  1 × ${DENIED} (e.g. ${denied()})`);
    expect(run.stderr).toContain('error: every page of the crawl failed (1); the reasons are above');
  });

  it('crawl counts a 404 page in the summary by status class, though the page is delivered as ok', async () => {
    // The fixture site has 20 pages: /p/99 answers 404 "not here".
    const missing = site.url(99);

    const run = await runCli(['crawl', missing, '--appid', APPID, '--crawlid', 'broken-link'], env);

    expect(run.code).toBe(0);
    expect(run.stdout).toContain('crawl broken-link complete: 1 page, 0 failed in ');
    expect(run.stdout).toContain('by status: 1 4xx\n');
  });

  it('crawl counts the links its rules kept from being followed, by rule', async () => {
    // Every fixture page links to /files/doc.pdf, which the default deny_extensions keep; pages at the last depth are
    // not read for links, so only the seed's counts.
    const run = await runCli(['crawl', site.url(0), '--depth', '1', '--appid', APPID, '--crawlid', 'skipped'], env);

    expect(run.code).toBe(0);
    expect(run.stdout).toContain('links not followed: 1 by deny_extensions\n');
    const json = await runCli(
      ['crawl', site.url(1), '--depth', '1', '--appid', APPID, '--crawlid', 'skipped-json', '--json'],
      env,
    );
    expect(JSON.parse(json.stdout)).toMatchObject({ links_skipped: { deny_extensions: 1 } });
  });

  it('crawl --json counts a robots.txt denial (no HTTP status) as failed in status_classes', async () => {
    const run = await runCli(['crawl', denied(), '--appid', APPID, '--crawlid', 'denied-classes', '--json'], env);

    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ status_classes: { failed: 1 } });
  });

  it('crawl --json says status failed with the failures grouped by reason', async () => {
    const run = await runCli(['crawl', denied(), '--appid', APPID, '--crawlid', 'all-failed-json', '--json'], env);

    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({
      status: 'failed',
      pages: 0,
      failed: 1,
      failures: [{ reason: DENIED, count: 1, example: denied() }],
    });
  });

  it('feed prints the rejection of a request the cluster refuses after sending it, and exits 1', async () => {
    // The crawl above has finished: its seed is in the dupefilter, so feeding it again is a duplicate.
    const request = { appid: APPID, crawlid: 'all-failed', url: denied() };

    const run = await runCli(['feed', JSON.stringify(request)], env);

    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/rejected by the cluster \(appid=cli-fail-e2e crawlid=all-failed\): duplicate: /);
    expect(run.stdout).toContain('; 1 rejected (above)');
    expect(run.stderr).toContain('error: the cluster rejected 1 of 1 request sent');
  });

  it('feed -f names the line of a request the cluster refuses after sending it, and exits 1', async () => {
    // As above: the seed of the finished crawl is a duplicate; the line before it is accepted.
    const dir = await mkdtemp(join(tmpdir(), 'cli-fail-feed-'));
    try {
      const file = join(dir, 'requests.jsonl');
      const lines = [
        { appid: APPID, crawlid: 'from-file', url: site.url(2) },
        { appid: APPID, crawlid: 'all-failed', url: denied() },
      ];
      await writeFile(file, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);

      const run = await runCli(['feed', '--wait', '5', '-f', file], env);

      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(
        /line 2: rejected by the cluster \(appid=cli-fail-e2e crawlid=all-failed\): duplicate: /,
      );
      expect(run.stdout).toMatch(/sent 2 requests to \S+ \(2 crawl\) in [\d.]+ s; 1 rejected \(above\)/);
      expect(run.stderr).toContain('error: the cluster rejected 1 of 2 requests sent');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('feed of a request the cluster accepts says no rejection came, and exits 0', async () => {
    const request = { appid: APPID, crawlid: 'accepted', url: site.url(1) };

    const run = await runCli(['feed', '--wait', '2', JSON.stringify(request)], env);

    expect(run.code).toBe(0);
    expect(run.stdout).toContain('(appid=cli-fail-e2e crawlid=accepted); no rejection within 2 s');
  });

  it('crawl of a spider the cluster does not run ends at once: not crawled (refused) with the reason, exit 1', async () => {
    const run = await runCli(
      ['crawl', site.url(3), '--appid', APPID, '--crawlid', 'no-spider', '--spiderid', 'nosuch'],
      env,
    );

    expect(run.code).toBe(1);
    expect(run.ms).toBeLessThan(20_000);
    expect(run.stdout).toContain('crawl no-spider not crawled (refused): 0 pages, 0 failed');
    expect(run.stderr).toMatch(/error: the cluster refused the crawl request: unknown_spider: /);
    expect(run.stderr).not.toContain('pending ?');
  });

  it('feed of a request for a spider the cluster does not run prints its rejection as it comes, and exits 1', async () => {
    const request = { appid: APPID, crawlid: 'feed-no-spider', url: site.url(4), spiderid: 'nosuch' };

    const run = await runCli(['feed', JSON.stringify(request), '--wait', '15'], env);

    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /rejected by the cluster \(appid=cli-fail-e2e crawlid=feed-no-spider\): unknown_spider: /,
    );
    expect(run.stdout).toContain('; 1 rejected (above)');
    // The rejection ends the wait: it does not run its 15 s.
    expect(run.ms).toBeLessThan(14_000);
  });

  it('info, stop and stats take the same default appid as crawl (cli)', async () => {
    const run = await runCli(['info', '--crawlid', 'nothing-here'], env);

    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^crawl nothing-here of app cli \(spider link\): 0 requests pending/);
  });

  it('demo refuses to start while a cluster runs on its prefix, saying what runs and what to do', async () => {
    const run = await runCli(['demo', '--no-localstack', '--timeout', '30'], env);

    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `another cluster is running on topic prefix "${t.vars.KAFKA_TOPIC_PREFIX}" (its kafka-monitor group ${t.vars.KAFKA_TOPIC_PREFIX}.kafka-monitor has`,
    );
    expect(run.stderr).toContain('crawl-cluster crawl <url>');
    // It stopped before starting anything: no demo site, no crawl.
    expect(run.stdout).toBe('');
  });

  it('a second local whose REST port is taken says another local is running, instead of a bare EADDRINUSE', async () => {
    const run = await runCli(
      ['local', '--no-localstack', '--rest-port', String(held.port), '--frontier-port', '0'],
      env,
    );

    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `error: cannot listen on 127.0.0.1:${held.port} for the REST API: the port is in use, most likely by another \`crawl-cluster local\``,
    );
    expect(run.stderr).toContain('--rest-port and --frontier-port');
  });

  it('local checks CRAWLER_PLUGINS before it starts its servers: a directory is named as one, with its modules', async () => {
    // The REST port is taken too: the plugin error coming first shows the check ran before the server started.
    const run = await runCli(['local', '--no-localstack', '--rest-port', String(held.port), '--frontier-port', '0'], {
      ...env,
      CRAWLER_PLUGINS: 'examples',
      CRAWLER_WORKERS: '1',
    });

    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /error: CRAWLER_PLUGINS: examples: is a directory \(.*\/examples\); name the plugin module files, comma-separated, e\.g\. CRAWLER_PLUGINS=examples\/hand-off\/shop\.ts,examples\/json-ld-products\/products\.ts/,
    );
    expect(run.stderr).not.toContain('cannot listen');
  });
});

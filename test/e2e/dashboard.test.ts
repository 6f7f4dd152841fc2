/**
 * The web dashboard (`GET /ui`, lib/rest/dashboard.ts) as a person uses it: Debian's `chromium` driven
 * headless by playwright-core, against the REST server of `crawl-cluster local` over the Lambda's REST deps,
 * in front of a local cluster with one crawler worker process crawling fixture sites on loopback.
 *
 * Chromium is required, not optional: when `/usr/bin/chromium` (or `$CHROMIUM_PATH`) is missing the tests
 * fail and say how to install it (CI's .ci/run installs it). No browser is ever downloaded, and the browser
 * runs with background networking off (the machine may have no internet).
 *
 * The screenshot goes to test-artifacts/dashboard.png (git-ignored).
 */
import { constants } from 'node:fs';
import { access, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createRestDeps, type RestDeps } from '../../functions/rest/deps.ts';
import { silentLog } from '../../lib/ports.ts';
import { createRestRouter } from '../../lib/rest/router.ts';
import { type RestServer, startRestServer } from '../../localstack/runtime/rest-server.ts';
import { type FixtureSite, startSite } from '../../localstack/site/site.ts';
import { startTestCluster, type TestCluster } from '../helpers/cluster.ts';
import { uniqueName } from '../helpers/services.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));
const APPID = 'dash-e2e';
/** Flags for a machine without internet: nothing may phone home. */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

async function requireChromium(): Promise<void> {
  try {
    await access(CHROMIUM, constants.X_OK);
  } catch {
    throw new Error(
      `The dashboard test needs Debian's chromium at ${CHROMIUM} (or set CHROMIUM_PATH): ` +
        'run `apt-get install -y chromium` (.ci/run does). The test never downloads a browser.',
    );
  }
}

describe('the web dashboard in headless Chromium', () => {
  let site: FixtureSite;
  /** A one-host site the test throttles to one page a minute, so a crawl of it is still running when stopped. */
  let slow: FixtureSite;
  let t: TestCluster;
  let deps: RestDeps;
  let server: RestServer;
  let userDataDir: string;
  let browser: BrowserContext;
  let page: Page;
  const browserErrors: string[] = [];

  beforeAll(async () => {
    await requireChromium();
    userDataDir = await mkdtemp(join(tmpdir(), 'dashboard-chromium-'));
    // launchPersistentContext passes this fresh directory as --user-data-dir.
    browser = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1280, height: 900 },
      timeout: 30_000,
    });
    page = browser.pages()[0] ?? (await browser.newPage());
    page.on('console', (m) => {
      if (m.type() === 'error') browserErrors.push(m.text());
    });
    page.on('pageerror', (e) => browserErrors.push(e.message));

    site = await startSite({ pages: 60, links: 4 });
    slow = await startSite({ pages: 200, links: 5, hosts: ['slow.test'] });
    t = await startTestCluster(
      {
        ALLOW_PRIVATE_NETWORKS: true,
        CRAWLER_HOST_MAP: `${site.hostMap},${slow.hostMap}`,
        QUEUE_HITS: 1000,
        QUEUE_WINDOW: 1,
        QUEUE_MODERATED: false,
        LOG_LEVEL: 'WARN',
      },
      { crawlerWorkers: 1 },
    );
    deps = createRestDeps('dashboard-e2e', silentLog, t.vars);
    server = await startRestServer({ context: deps.ctx, port: 0 });
  });
  afterAll(async () => {
    await browser?.close();
    if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
    await server?.close();
    await deps?.close();
    await t?.stop();
    await site?.close();
    await slow?.close();
  });

  const row = (crawlid: string) => page.locator(`tr[data-crawlid="${crawlid}"]`);
  const cell = (crawlid: string, field: string) => row(crawlid).locator(`[data-field="${field}"]`);
  const cellNumber = async (crawlid: string, field: string) =>
    Number(((await cell(crawlid, field).textContent()) ?? '').replaceAll(',', ''));

  async function submitCrawl(url: string, crawlid: string, depth: number): Promise<void> {
    await page.fill('#feed-url', url);
    await page.fill('#feed-appid', APPID);
    await page.fill('#feed-crawlid', crawlid);
    await page.selectOption('#feed-depth', String(depth));
    await page.click('#feed-submit');
    await expect.poll(() => page.textContent('#feed-result')).toBe(`crawl ${crawlid} submitted to app ${APPID}`);
  }

  test('GET /ui is one self-contained page with a strict CSP; the JSON endpoints validate their query', async () => {
    const ui = await fetch(`${server.url}/ui`);
    expect(ui.status).toBe(200);
    expect(ui.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(ui.headers.get('content-security-policy')).toMatch(/default-src 'none'; script-src 'sha256-[^']+'/);
    const html = await ui.text();
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).not.toMatch(/(src|href)="https?:/);
    expect(html).not.toContain('innerHTML');

    const bad = await fetch(`${server.url}/ui/api/overview?appid=ab`);
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ status: 'FAILURE', error: { details: [{ path: '/appid' }] } });
    const queues = await fetch(`${server.url}/ui/api/queues?top=5`);
    expect(await queues.json()).toEqual({
      status: 'SUCCESS',
      error: null,
      data: { total_backlog: 0, num_domains: 0, top: [] },
    });
    expect((await fetch(`${server.url}/ui/api/overview`, { method: 'POST' })).status).toBe(405);
    // A REST context without a frontier serves the page but not the data.
    const bare = createRestRouter({ ...deps.ctx, frontier: undefined });
    const answer = await bare({ method: 'GET', path: '/ui/api/fleet', headers: {} });
    expect(answer.status).toBe(503);
    expect((await bare({ method: 'GET', path: '/ui', headers: {} })).status).toBe(200);
  });

  test('a crawl submitted through the form is shown until it completes, with every page done', async () => {
    await page.goto(`${server.url}/ui?appid=${APPID}`);
    // The one crawler worker process's heartbeat.
    await page.waitForSelector('#fleet-crawlers li', { timeout: 30_000 });
    expect(await page.locator('#fleet-crawlers li').count()).toBe(1);
    await expect.poll(() => page.textContent('#health'), { timeout: 15_000 }).toBe('GREEN');

    const expected = site.reachable(0, 1).size;
    await submitCrawl(site.url(0), 'small', 1);
    await page.waitForSelector('tr[data-crawlid="small"][data-state="complete"]', { timeout: 60_000 });
    expect(await cellNumber('small', 'done')).toBe(expected);
    expect(await cellNumber('small', 'pending')).toBe(0);
    expect(await cellNumber('small', 'failed')).toBe(0);
    expect(await row('small').locator('[role="progressbar"]').getAttribute('aria-valuenow')).toBe('100');
    // The counters drive the throughput panel.
    await expect
      .poll(() => page.textContent('#rate-totals'), { timeout: 10_000 })
      .toMatch(new RegExp(`lifetime: ${expected}$`));
  }, 120_000);

  test('the Stop button stops a running crawl and shows the reply; its pending drops to 0', async () => {
    // One page a minute from slow.test: after the seed, its children wait in the queue.
    const throttle = await fetch(`${server.url}/feed`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        uuid: uniqueName('u'),
        appid: APPID,
        domain: 'slow.test',
        action: 'domain-update',
        hits: 1,
        window: 60,
      }),
    });
    expect(((await throttle.json()) as { data: { action?: string } }).data.action).toBe('domain-update');

    await submitCrawl(slow.url(0), 'big', 3);
    await page.waitForSelector('tr[data-crawlid="big"][data-state="running"]', { timeout: 30_000 });
    await expect.poll(() => cellNumber('big', 'pending'), { timeout: 30_000 }).toBeGreaterThan(1);
    // The queues panel shows the throttled domain's backlog.
    await page.waitForSelector('#queue-rows tr[data-domain="slow.test"]', { timeout: 10_000 });

    const stop = row('big').locator('button[data-action="stop"]');
    await stop.click();
    await expect.poll(() => stop.textContent()).toBe('Confirm stop');
    await stop.click();
    await expect
      .poll(() => cell('big', 'stop-result').textContent(), { timeout: 15_000 })
      .toMatch(/^stopped: \d+ pending requests? purged$/);
    const purged = Number((await cell('big', 'stop-result').textContent())?.match(/\d+/)?.[0]);
    expect(purged).toBeGreaterThan(0);
    await page.waitForSelector('tr[data-crawlid="big"][data-state="stopped"]', { timeout: 15_000 });
    expect(await cellNumber('big', 'pending')).toBe(0);
    expect(await stop.isVisible()).toBe(false);
    // The cluster agrees: nothing of slow.test left in the queues.
    await expect
      .poll(async () => page.locator('#queue-rows tr[data-domain="slow.test"]').count(), { timeout: 10_000 })
      .toBe(0);
    // The finished crawl is still listed as complete.
    expect(await row('small').getAttribute('data-state')).toBe('complete');

    expect(browserErrors).toEqual([]);
  }, 120_000);

  test('a crawl whose every page failed is shown failed, not complete, with each failure and its reason', async () => {
    // The fixture site's robots.txt disallows /private/: the one page fails at once, without retries.
    const denied = `${new URL(site.url(0)).origin}/private/secret`;
    await submitCrawl(denied, 'denied', 0);
    await page.waitForSelector('tr[data-crawlid="denied"][data-state="failed"]', { timeout: 60_000 });
    expect(await row('denied').locator('.badge').textContent()).toBe('failed');
    expect(await cellNumber('denied', 'failed')).toBe(1);
    expect(await cellNumber('denied', 'done')).toBe(0);
    expect(await row('denied').locator('[role="progressbar"]').getAttribute('class')).toBe('bar failed');
    const failures = page.locator('tr[data-failures-of="denied"]');
    expect(await failures.isVisible()).toBe(true);
    expect(await failures.locator(`li[data-url="${denied}"]`).textContent()).toBe(
      `no response ${denied}: robots.txt disallows this URL`,
    );
    // A crawl with no failure has no failure row.
    expect(await page.locator('tr[data-failures-of="small"]').isVisible()).toBe(false);
    expect(browserErrors).toEqual([]);
  }, 120_000);

  test('the throughput chart starts on every load with the last 15 minutes the counters keep', async () => {
    // 120 pages counted three minutes ago, as a crawler would have: the counters' own per-minute buckets hold them.
    const then = Date.now() - 180_000;
    await deps.ctx.stats.increment([{ name: 'crawler:link:200', by: 120 }], then);
    const api = (await (await fetch(`${server.url}/ui/api/throughput`)).json()) as {
      data: { minutes: { start_ms: number; pages: number }[] };
    };
    expect(api.data.minutes).toHaveLength(15);
    expect(api.data.minutes.find((m) => m.start_ms === Math.floor(then / 60_000) * 60_000)?.pages).toBe(120);

    await page.reload();
    // The first answer draws the history: the 14 whole minutes, one point each, on a scale that fits 120 pages/min.
    await page.waitForSelector('#chart polyline', { timeout: 10_000 });
    const points = ((await page.getAttribute('#chart polyline', 'points')) ?? '').split(' ');
    expect(points.length).toBeGreaterThanOrEqual(14);
    expect(await page.locator('#chart text').allTextContents()).toContain('200');
    // The counters of every app, not only the watched one, and said so.
    expect(await page.locator('h2', { hasText: 'Throughput' }).textContent()).toBe('Throughput (all apps)');
    // A few refreshes after a load are too short a span for a rate (it would read 0 between the crawlers' batches):
    // the last whole minute is shown until 10 s are measured. Two refreshes after the load (each redraws `#updated`,
    // a clock with seconds, every 2 s) are such a span.
    for (let i = 0; i < 2; i++) {
      const before = await page.textContent('#updated');
      await page
        .locator('#updated')
        .filter({ hasNotText: before ?? '' })
        .waitFor({ timeout: 10_000 });
    }
    expect(await page.textContent('#rate-now')).toMatch(/pages\/min in the last whole minute$/);
    expect(browserErrors).toEqual([]);
  }, 60_000);

  test('requests per proxy are listed by the proxy’s name, with those it failed', async () => {
    expect(await page.locator('#proxies').isHidden()).toBe(true);
    await deps.ctx.stats.increment(
      [
        { name: 'proxy:10.0.1.5:3128:ok', by: 30 },
        { name: 'proxy:10.0.1.5:3128:proxy_connect', by: 2 },
        { name: 'proxy:eu-2:ok', by: 5 },
      ],
      Date.now(),
    );
    const api = (await (await fetch(`${server.url}/ui/api/throughput`)).json()) as {
      data: { proxies: { name: string; ok_total: number; failed_total: number }[] };
    };
    expect(api.data.proxies).toEqual([
      { name: '10.0.1.5:3128', ok_total: 30, ok_15m: 30, failed_total: 2, failed_15m: 2 },
      { name: 'eu-2', ok_total: 5, ok_15m: 5, failed_total: 0, failed_15m: 0 },
    ]);
    await expect
      .poll(() => page.locator('#proxies [data-proxy]').allTextContents(), { timeout: 10_000 })
      .toEqual(['10.0.1.5:3128: 30 ok, 2 failed', 'eu-2: 5 ok, 0 failed']);
    expect(browserErrors).toEqual([]);
  }, 60_000);

  test('a crawler whose heartbeat is over a minute old is dropped from the fleet', async () => {
    // A crawler of a runtime that was killed: its last beat 90 s ago (still within the stats' 5-minute TTL).
    await deps.ctx.stats.beat('crawler', 'link|killed-host:1', Date.now() - 90_000, 300_000);
    const fleet = (await (await fetch(`${server.url}/ui/api/fleet`)).json()) as {
      data: { crawlers: { node: string }[] };
    };
    expect(fleet.data.crawlers.map((c) => c.node)).not.toContain('killed-host:1');
    // The one live worker process (a heartbeat per spider type it serves).
    expect(new Set(fleet.data.crawlers.map((c) => c.node)).size).toBe(1);
    await expect.poll(() => page.locator('#fleet-crawlers li').count(), { timeout: 10_000 }).toBe(1);

    await mkdir(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard.png'), fullPage: true });
    expect(browserErrors).toEqual([]);
  }, 60_000);
});

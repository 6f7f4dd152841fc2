/**
 * The `browser` spider type through the local cluster (docs/spiders-browser.md): a crawler worker serving the HTML
 * spiders and a browser worker (functions/crawler/main.ts with CRAWLER_SPIDERS=browser, Debian's Chromium driven by
 * playwright-core) crawl the demo site's `/js` page, whose links exist only after its script runs (two written at once,
 * two from a fetch). `spiderid: "browser"` follows all four, the link spider none; the browser page's body is the
 * rendered HTML.
 */
import { access, constants } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type FixtureSite, JS_PAGE_LINKS, startSite } from '../../localstack/site/site.ts';
import {
  type Collector,
  completeNotice,
  crawlPages,
  type E2eCluster,
  startE2eCluster,
  startRegisteredWorkers,
} from '../helpers/cluster.ts';
import type { CrawlerProcess } from '../helpers/crawler-process.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const APPID = 'browser-e2e';

describe('the browser spider type', () => {
  let site: FixtureSite;
  let t: E2eCluster;
  let pages: Collector;
  let outbound: Collector;
  let browserWorker: CrawlerProcess;
  const jsUrl = () => `http://${site.hosts[0]}:${site.port}/js`;

  beforeAll(async () => {
    await access(CHROMIUM, constants.X_OK).catch(() => {
      throw new Error(`The browser spider test needs Debian's chromium at ${CHROMIUM} (or set CHROMIUM_PATH).`);
    });
    site = await startSite({ pages: 10, links: 2 });
    t = await startE2eCluster({ BROWSER_CHROMIUM_PATH: CHROMIUM }, { site });
    ({ pages, outbound } = t);
    [browserWorker] = await startRegisteredWorkers(t, 'browser', [{ CRAWLER_SPIDERS: 'browser', BROWSER_PAGES: 2 }]);
  }, 90_000);
  afterAll(async () => {
    await browserWorker?.stop();
    await t?.stop();
    await site?.close();
  });

  test('spiderid "browser" follows every link the script builds; its body is the rendered HTML', async () => {
    await t.feed([{ url: jsUrl(), appid: APPID, crawlid: 'rendered', spiderid: 'browser', maxdepth: 1 }]);
    const done = await completeNotice(outbound, 'rendered', 90_000).catch((e: Error) => {
      throw new Error(`${e.message}\n${browserWorker.output().slice(-3000)}`);
    });
    expect(done).toMatchObject({ total_pages: 1 + JS_PAGE_LINKS.length, total_failed: 0 });
    const got = crawlPages(pages, 'rendered');
    const urls = got.map((p) => new URL(String(p.url)).pathname).sort();
    expect(urls).toEqual(['/js', ...JS_PAGE_LINKS].sort());
    for (const p of got) expect(p).toMatchObject({ spiderid: 'browser', success: true, status_code: 200 });
    const root = got.find((p) => String(p.url).endsWith('/js')) as Record<string, unknown>;
    const body = String(root.body);
    // In the served HTML the list is empty; rendered, it holds the four links.
    for (const path of JS_PAGE_LINKS) expect(body).toContain(`<a href="${path}">${path}</a>`);
    expect((root.links as { url: string }[]).map((l) => new URL(l.url).pathname).sort()).toEqual(
      [...JS_PAGE_LINKS].sort(),
    );
    expect(root.response_url).toBe(jsUrl());
    expect(browserWorker.child.exitCode).toBeNull();
  }, 120_000);

  test('the link spider finds no link on the same page: its body is the HTML as served', async () => {
    await t.feed([{ url: jsUrl(), appid: APPID, crawlid: 'raw', spiderid: 'link', maxdepth: 1 }]);
    const done = await completeNotice(outbound, 'raw', 60_000);
    expect(done).toMatchObject({ total_pages: 1, total_failed: 0 });
    const [page] = crawlPages(pages, 'raw');
    expect(page).toMatchObject({ spiderid: 'link', success: true, links: [] });
    expect(String(page?.body)).toContain('<ul id="links"></ul>');
  }, 90_000);
});

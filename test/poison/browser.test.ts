/**
 * Poison tier, the browser path (issue 35, docs/spiders-browser.md): a browser worker PROCESS (functions/crawler/main.ts
 * with CRAWLER_SPIDERS=browser) on the real local cluster renders hostile pages in Debian's Chromium.
 * - A page that loops forever in JavaScript, one that allocates without end, one that opens 10,000 requests: each is
 *   given up after its retries with a `success:false` page naming its budget, and the worker goes on (a normal page
 *   afterwards renders).
 * - A page whose script (and an iframe, and a WebSocket) reaches for private addresses, with private networks refused
 *   (only the fixture's own host is trusted, CRAWLER_TRUSTED_HOSTS): the page succeeds, and the private target sees
 *   nothing.
 */
import { access, constants } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
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
const APPID = 'browser-poison';
const HOST = 'browser-poison.test';
/** Mapped to loopback too, but not trusted: the guard must refuse it like any private address. */
const SECRET_HOST = 'secret.test';
const MAX_REQUESTS = 100;

interface Listening {
  server: Server;
  port: number;
  hits: Map<string, number>;
}

async function listen(handle: (path: string) => [string, string]): Promise<Listening> {
  const hits = new Map<string, number>();
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] as string;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const [type, body] = handle(path);
    res.writeHead(200, { 'content-type': type }).end(body);
  });
  // Upgrades (a WebSocket) count as hits too.
  server.on('upgrade', (req, socket) => {
    hits.set(req.url ?? '/', (hits.get(req.url ?? '/') ?? 0) + 1);
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, hits };
}

const page = (script: string, body = '') => `<html><body>${body}<script>${script}</script></body></html>`;

describe('hostile pages on a browser worker', () => {
  let site: Listening;
  let secret: Listening;
  let t: E2eCluster;
  let pages: Collector;
  let outbound: Collector;
  let worker: CrawlerProcess;
  const url = (path: string) => `http://${HOST}:${site.port}${path}`;

  beforeAll(async () => {
    await access(CHROMIUM, constants.X_OK).catch(() => {
      throw new Error(`The browser poison tests need Debian's chromium at ${CHROMIUM} (or set CHROMIUM_PATH).`);
    });
    secret = await listen(() => ['text/plain', 'secret']);
    const targets = [
      `http://127.0.0.1:${secret.port}/literal`,
      `http://${SECRET_HOST}:${secret.port}/by-name`,
      'http://169.254.169.254/latest/meta-data/',
      'http://10.0.0.1/',
    ];
    const pagesByPath: Record<string, string> = {
      '/loop': page('while (true) {}'),
      '/hog': page('const keep = []; while (true) keep.push(new Array(1e6).fill(keep.length));'),
      '/many': page("for (let i = 0; i < 10000; i++) fetch('/r/' + i).catch(() => {});"),
      '/private': page(
        `for (const u of ${JSON.stringify(targets)}) fetch(u).catch(() => {});` +
          `try { new WebSocket('ws://127.0.0.1:${secret.port}/ws'); } catch {}` +
          `const f = document.createElement('iframe'); f.src = 'http://127.0.0.1:${secret.port}/frame';` +
          'document.body.append(f);',
        '<a href="/ok">ok</a>',
      ),
    };
    site = await listen((path) => {
      if (path === '/robots.txt') return ['text/plain', 'User-agent: *\nAllow: /\n'];
      return ['text/html', pagesByPath[path] ?? '<html><body><p>fine</p></body></html>'];
    });
    t = await startE2eCluster(
      { ALLOW_PRIVATE_NETWORKS: false, QUEUE_HITS: 100_000, RETRY_TIMES: 1, RETRY_BASE_DELAY_MS: 100 },
      { crawlerWorkers: 0 },
    );
    ({ pages, outbound } = t);
    [worker] = await startRegisteredWorkers(t, 'browser', [
      {
        CRAWLER_SPIDERS: 'browser',
        CRAWLER_HOST_MAP: `${HOST}=127.0.0.1,${SECRET_HOST}=127.0.0.1`,
        CRAWLER_TRUSTED_HOSTS: HOST,
        BROWSER_CHROMIUM_PATH: CHROMIUM,
        BROWSER_PAGES: 2,
        BROWSER_PAGE_TIMEOUT_MS: 5000,
        BROWSER_PAGE_MEMORY_MB: 64,
        BROWSER_MAX_REQUESTS: MAX_REQUESTS,
      },
    ]);
  }, 90_000);
  afterAll(async () => {
    await worker?.stop();
    await t?.stop();
    for (const s of [site, secret]) await new Promise((resolve) => s?.server.close(resolve));
  });

  /** The worker still runs, and renders a normal page. */
  async function goesOn(crawlid: string): Promise<void> {
    expect(worker.child.exitCode, worker.output().slice(-2000)).toBeNull();
    await t.feed([{ url: url(`/ok/${crawlid}`), appid: APPID, crawlid, spiderid: 'browser', maxdepth: 0 }]);
    const done = await completeNotice(outbound, crawlid, 60_000);
    expect(done).toMatchObject({ total_pages: 1, total_failed: 0 });
  }

  test.each([
    ['loops forever in JavaScript', 'loop', '/loop', /did not finish rendering within 5000 ms/],
    ['allocates without end', 'hog', '/hog', /crashed in the browser \(out of memory|did not finish rendering/],
    // 10,000 requests: the request budget, unless the renderer is still issuing them when the time budget ends.
    [
      'opens 10,000 requests',
      'many',
      '/many',
      new RegExp(`more than ${MAX_REQUESTS} requests|did not finish rendering`),
    ],
  ])(
    'a page that %s: success:false with its budget as the reason, and the worker goes on',
    async (_name, crawlid, path, reason) => {
      await t.feed([{ url: url(path), appid: APPID, crawlid, spiderid: 'browser', maxdepth: 0 }]);
      const done = await completeNotice(outbound, crawlid, 90_000).catch((e: Error) => {
        throw new Error(`${e.message}\n${worker.output().slice(-3000)}`);
      });
      expect(done).toMatchObject({ total_pages: 0, total_failed: 1 });
      const [failed] = crawlPages(pages, crawlid);
      expect(failed).toMatchObject({ success: false, spiderid: 'browser', retry_times: 1 });
      expect(String(failed?.exception)).toMatch(reason);
      if (crawlid === 'many') {
        // Two tries, each bounded by the budget: far fewer than 10,000 requests reached the site.
        const served = [...site.hits.keys()].filter((p) => p.startsWith('/r/')).length;
        expect(served).toBeLessThanOrEqual(2 * MAX_REQUESTS);
      }
      await goesOn(`after-${crawlid}`);
    },
    150_000,
  );

  test('a page whose script reaches for private addresses: the page succeeds, nothing private is fetched', async () => {
    await t.feed([{ url: url('/private'), appid: APPID, crawlid: 'private', spiderid: 'browser', maxdepth: 0 }]);
    const done = await completeNotice(outbound, 'private', 60_000);
    expect(done).toMatchObject({ total_pages: 1, total_failed: 0 });
    const [rendered] = crawlPages(pages, 'private');
    expect(rendered).toMatchObject({ success: true, status_code: 200 });
    expect(String(rendered?.body)).toContain('<iframe');
    expect([...secret.hits.entries()]).toEqual([]);
    await goesOn('after-private');
  }, 120_000);
});

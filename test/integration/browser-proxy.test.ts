/**
 * The browser spider through a forward proxy (docs/proxies.md "The browser spider"): headless Chromium (Debian's, driven
 * by playwright-core) renders a page whose script fetches more, and every request of it, the document and the
 * script's fetches, is made by the crawler's fetcher through an authenticated proxy-chain `Server`
 * (test/helpers/forward-proxy.ts). The crawler resolves the site's name to 127.0.0.2, where nothing listens, and only the
 * proxy resolves it to 127.0.0.1, where the site is: a page that renders went through the proxy, request by request.
 * A fetch of a private address by the page's script is still refused by the SSRF guard, never handed to the proxy.
 */
import { access, constants } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { BrowserFetcher } from '../../lib/crawl/browser/fetcher.ts';
import { UndiciFetcher } from '../../lib/crawl/fetch/fetcher.ts';
import { parseProxies } from '../../lib/crawl/fetch/proxy-config.ts';
import { RecordingLog } from '../helpers/fake-stores.ts';
import { type ForwardProxy, startForwardProxy } from '../helpers/forward-proxy.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CREDENTIALS = { username: 'browser', password: 'br0wser-pr0xy-pw' };
const HOST = 'rendered.test';

/** A page whose links exist only after its script ran: one from a same-origin fetch, one only if a private fetch got through. */
const page = (port: number) => `<!doctype html><html><body><ul id="links"></ul><script>
const add = (p) => { const a = document.createElement('a'); a.href = p; a.textContent = p; const li = document.createElement('li'); li.append(a); document.getElementById('links').append(li); };
fetch('/data.json').then((r) => r.json()).then((paths) => paths.forEach(add));
fetch('http://127.0.0.1:${port}/private').then(() => add('/leaked'), () => add('/refused'));
</script></body></html>`;

describe('the browser spider through a proxy', () => {
  let site: Server;
  let port: number;
  let proxy: ForwardProxy;
  let fetcher: UndiciFetcher;
  let browser: BrowserFetcher;
  const seen: { url: string; headers: IncomingMessage['headers'] }[] = [];

  beforeAll(async () => {
    await access(CHROMIUM, constants.X_OK).catch(() => {
      throw new Error(`The browser proxy test needs Debian's chromium at ${CHROMIUM} (or set CHROMIUM_PATH).`);
    });
    site = createServer((req, res) => {
      seen.push({ url: req.url ?? '', headers: req.headers });
      if (req.url === '/data.json') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(['/from-fetch/1', '/from-fetch/2']));
      } else {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(page(port));
      }
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    port = (site.address() as AddressInfo).port;
    proxy = await startForwardProxy({ credentials: CREDENTIALS, hostMap: { [HOST]: '127.0.0.1' } });
    fetcher = new UndiciFetcher({
      allowPrivateNetworks: false,
      // Trusted by the guard, and where nothing listens: a request made directly fails.
      resolve: { [HOST]: '127.0.0.2' },
      trustedHosts: [HOST],
      proxies: parseProxies(proxy.url()),
    });
    browser = new BrowserFetcher({
      fetcher,
      executablePath: CHROMIUM,
      maxPages: 1,
      contextPages: 10,
      pageMemoryMb: 256,
      pageTimeoutMs: 30_000,
      settleMs: 500,
      budget: { maxRequests: 20, maxBytes: 1_000_000 },
      log: new RecordingLog(),
    });
  });
  afterAll(async () => {
    await browser?.close();
    await fetcher?.close();
    await proxy?.kill();
    site?.closeAllConnections();
    await new Promise((resolve) => site?.close(resolve));
  });

  test('the page and its script’s fetches go through the proxy; a private fetch is refused before it', async () => {
    const url = `http://${HOST}:${port}/`;
    const directFetcher = new UndiciFetcher({ resolve: { [HOST]: '127.0.0.2' }, trustedHosts: [HOST] });
    const direct = await directFetcher.fetch({ url, userAgent: '' }).catch((e: Error) => e);
    await directFetcher.close();
    expect(direct).toMatchObject({ kind: 'connect' });

    const rendered = await browser.fetch({ url, userAgent: 'ua', crawl: 'app/c1' });
    expect(rendered.status).toBe(200);
    const text = rendered.text ?? '';
    for (const path of ['/from-fetch/1', '/from-fetch/2', '/refused']) expect(text).toContain(`<a href="${path}">`);
    expect(text).not.toContain('<a href="/leaked">');
    expect(seen.map((s) => s.url).sort()).toEqual(['/', '/data.json']);
    expect(new Set(proxy.targets)).toEqual(new Set([HOST]));
    expect(proxy.refused()).toBe(0);
    expect(seen.every((s) => s.headers['proxy-authorization'] === undefined)).toBe(true);
    expect(text).not.toContain(CREDENTIALS.password);
  });
});

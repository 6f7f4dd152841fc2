/**
 * A web site of hostile pages on loopback for the poison tier (docs/design.md §10), plus a harmless `/ok`. Every
 * page is generated on request; the site counts the requests of each path, so a test can tell a page that
 * was fetched once from one that is fetched forever.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';

export interface HostileSite {
  /** `http://<host>:<port><path>`. */
  url(path: string): string;
  /** The crawler's host map entry for this site (`CRAWLER_HOST_MAP`). */
  hostMap: string;
  /** Requests received per path (robots.txt included). */
  hits: Map<string, number>;
  close(): Promise<void>;
}

/** The hostile pages: path → [content type, body]. Bodies are built once, on first request. */
const PAGES: Record<string, () => [string, string | Buffer]> = {
  '/ok': () => ['text/html', '<html><body><p>fine</p></body></html>'],
  // 500,000 links: ~13 MB, cut at the 10 MiB body limit; the links alone are far over any message limit.
  '/links-500k': () => [
    'text/html',
    Array.from({ length: 500_000 }, (_, i) => `<a href="/l/${i}">link ${i}</a>`).join('\n'),
  ],
  // 100,000 links: 5.7 MB of page message with the old code, over MSK's 1 MB default.
  '/links-100k': () => ['text/html', Array.from({ length: 100_000 }, (_, i) => `<a href="/m/${i}">m${i}</a>`).join('')],
  // 1,000,000 nested divs, a link at the bottom: quadratic in a DOM builder.
  '/divs-1m': () => ['text/html', `${'<div>'.repeat(1_000_000)}<a href="/ok">bottom</a>`],
  // 200,000 spans inside one anchor: overflowed the recursive link-text collector.
  '/spans-in-a': () => ['text/html', `<a href="/ok">${'<span>'.repeat(200_000)}deep${'</span>'.repeat(200_000)}</a>`],
  // 80,000 nested mixed tags, then as many unmatched closing tags.
  '/nested-80k': () => ['text/html', `${'<b><i>'.repeat(40_000)}<a href="/ok">x</a>${'</u>'.repeat(80_000)}`],
  // Binary bytes labelled HTML.
  '/binary-html': () => ['text/html', Buffer.from(Array.from({ length: 200_000 }, (_, i) => (i * 7919 + 13) % 256))],
};

export const HOSTILE_PATHS = Object.keys(PAGES).filter((p) => p !== '/ok');

/** Decoded size of a compression bomb: 20 MiB of NUL bytes, text/plain, about 20 KB gzipped. */
export const BOMB_BYTES = 20 * 1024 * 1024;

/** `/bomb/<anything>`: a compression bomb of {@link BOMB_BYTES}, one URL per bomb a crawl needs. */
export function bombPath(n: number): string {
  return `/bomb/${n}`;
}

let bomb: Buffer | undefined;

export async function startHostileSite(host = 'hostile.test'): Promise<HostileSite> {
  const built = new Map<string, [string, string | Buffer]>();
  const hits = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] as string;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    if (path === '/robots.txt') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nAllow: /\n');
      return;
    }
    if (path.startsWith('/bomb/')) {
      bomb ??= gzipSync(Buffer.alloc(BOMB_BYTES));
      res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' }).end(bomb);
      return;
    }
    const make = PAGES[path];
    if (make === undefined) {
      res.writeHead(404, { 'content-type': 'text/html' }).end('<p>no</p>');
      return;
    }
    let page = built.get(path);
    if (page === undefined) {
      page = make();
      built.set(path, page);
    }
    res.writeHead(200, { 'content-type': page[0] }).end(page[1]);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://${host}:${port}${path}`,
    hostMap: `${host}=127.0.0.1`,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

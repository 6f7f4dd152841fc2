/**
 * A deterministic fixture web site on loopback, for the e2e crawl tests and the benchmarks: `pages` pages
 * spread over several host names (all served by one server; the crawler resolves the names to 127.0.0.1
 * through its host map), each linking to `links` others, plus the awkward cases a crawler must survive.
 *
 * Page `n` lives on host `hosts[n % hosts.length]` at `/p/<n>`; its links go to pages `(n * 7 + k * 13 + 1) % pages`
 * for k in 0..links-1 (deterministic, so tests can compute the exact page set for any depth).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';

export interface SiteOptions {
  /** @default 200 */
  pages?: number;
  /** @default 5 */
  links?: number;
  /** @default ['site-a.test', 'site-b.test', 'www.site-c.test'] */
  hosts?: string[];
  /** Approximate page size in bytes (filler text). @default 2000 */
  pageBytes?: number;
  /** Added latency per response (ms). @default 0 */
  latencyMs?: number;
  /** Port; 0 picks a free one. @default 0 */
  port?: number;
}

export interface FixtureSite {
  port: number;
  hosts: string[];
  pages: number;
  /** `http://<host>:<port>/p/<n>` */
  url(n: number): string;
  /** Link targets of page n, in page order. */
  linksOf(n: number): number[];
  /** Pages reachable from `seed` within `maxdepth` hops (seed included), optionally only on some hosts. */
  reachable(seed: number, maxdepth: number, allowHost?: (host: string) => boolean): Set<number>;
  /** Host map for the crawler (`CRAWLER_HOST_MAP`): every host → 127.0.0.1. */
  hostMap: string;
  /** Requests served per path (for assertions). */
  hits: Map<string, number>;
  close(): Promise<void>;
}

const FILLER = 'The quick brown fox jumps over the lazy dog while the crawler reads every word of it. ';

export async function startSite(options: SiteOptions = {}): Promise<FixtureSite> {
  const pages = options.pages ?? 200;
  const links = options.links ?? 5;
  const hosts = options.hosts ?? ['site-a.test', 'site-b.test', 'www.site-c.test'];
  const pageBytes = options.pageBytes ?? 2000;
  const latency = options.latencyMs ?? 0;
  const hits = new Map<string, number>();
  let port = 0;

  const hostOf = (n: number) => hosts[n % hosts.length] as string;
  const url = (n: number) => `http://${hostOf(n)}:${port}/p/${n}`;
  const linksOf = (n: number) => Array.from({ length: links }, (_, k) => (n * 7 + k * 13 + 1) % pages);
  const filler = FILLER.repeat(Math.ceil(pageBytes / FILLER.length)).slice(0, pageBytes);

  const page = (n: number) =>
    `<!doctype html><html><head><meta charset="utf-8"><title>Page ${n}</title></head><body><h1>Page ${n}</h1>` +
    `<p>${filler}</p><ul>${linksOf(n)
      .map((m) => `<li><a href="${url(m)}">page ${m}</a></li>`)
      .join('')}</ul><a href="mailto:someone@example.com">mail</a> <a href="/files/doc.pdf">pdf</a></body></html>`;

  const flaky = new Map<string, number>();
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0] as string;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    if (latency > 0) await sleep(latency);
    const html = (status: number, body: string, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', ...headers });
      res.end(body);
    };
    const m = path.match(/^\/p\/(\d+)$/);
    if (m) {
      const n = Number(m[1]);
      if (n >= pages || hostOf(n) !== (req.headers.host ?? '').split(':')[0]) return html(404, 'not here');
      return html(200, page(n));
    }
    if (path === '/robots.txt') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      return res.end('User-agent: *\nDisallow: /private/\n');
    }
    if (path.startsWith('/private/')) return html(200, '<p>secret</p>');
    if (path === '/redirect') return html(302, '', { location: '/p/0' });
    if (path === '/redirect-private') return html(302, '', { location: 'http://169.254.169.254/latest/meta-data/' });
    if (path === '/slow') {
      await sleep(30_000);
      return html(200, 'late');
    }
    if (path === '/big') {
      res.writeHead(200, { 'content-type': 'text/html' });
      const chunk = Buffer.alloc(1 << 20, 'a');
      for (let i = 0; i < 20 && !res.destroyed; i++) {
        if (!res.write(chunk)) await new Promise((r) => res.once('drain', r));
      }
      return res.end();
    }
    if (path === '/gzip') {
      const body = gzipSync(Buffer.from(`<html><body><a href="${url(1)}">one</a> gzip ok</body></html>`));
      res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' });
      return res.end(body);
    }
    if (path === '/latin1') {
      res.writeHead(200, { 'content-type': 'text/html; charset=iso-8859-1' });
      return res.end(Buffer.from('<html><body>caf\xe9 na\xefve</body></html>', 'latin1'));
    }
    if (path === '/image.png') {
      res.writeHead(200, { 'content-type': 'image/png' });
      return res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]));
    }
    const f = path.match(/^\/flaky\/(\d+)$/);
    if (f) {
      const seen = (flaky.get(path) ?? 0) + 1;
      flaky.set(path, seen);
      return seen <= Number(f[1]) ? html(503, 'try later', { 'retry-after': '0' }) : html(200, '<p>recovered</p>');
    }
    if (path === '/always-500') return html(500, 'broken');
    return html(404, 'not found');
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;

  return {
    port,
    hosts,
    pages,
    url,
    linksOf,
    reachable(seed, maxdepth, allowHost = () => true) {
      const seen = new Set([seed]);
      let frontier = [seed];
      for (let d = 0; d < maxdepth; d++) {
        const next: number[] = [];
        for (const n of frontier) {
          for (const m of linksOf(n)) {
            if (!seen.has(m) && allowHost(hostOf(m))) {
              seen.add(m);
              next.push(m);
            }
          }
        }
        frontier = next;
      }
      return seen;
    },
    hostMap: hosts.map((h) => `${h}=127.0.0.1`).join(','),
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

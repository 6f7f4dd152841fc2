/**
 * A deterministic fixture web site on loopback, for the e2e crawl tests and the benchmarks: `pages` pages
 * spread over several host names (all served by one server; the crawler resolves the names to 127.0.0.1
 * through its host map), each linking to `links` others, plus the awkward cases a crawler must survive.
 *
 * Page `n` lives on host `hosts[n % hosts.length]` at `/p/<n>`; its links go to pages `(n * 7 + k * 13 + 1) % pages`
 * for k in 0..links-1 (deterministic, so tests can compute the exact page set for any depth).
 *
 * Two page templates: `plain` (the default: a heading, one paragraph of filler, the links in a list) and
 * `article` (the benchmarks: a news-article-like page of about `pageBytes` with head metadata, inline
 * styles and scripts, a header and navigation, paragraphs with inline markup, a figure, a table, the links
 * spread through the text and a "related" list, and a footer). Both carry exactly the `links` page links
 * plus a `mailto:` and a relative `/files/doc.pdf` link; `article` adds no other `<a href>`.
 *
 * {@link startSite} serves from this process; localstack/site/process.ts `startSiteProcess` serves the same
 * site from a child process, so a benchmark's client does not share its event loop with the server.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { prng } from './prng.ts';

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
  /** Page template (see the module doc). @default 'plain' */
  template?: SiteTemplate;
  /** robots.txt asks for this Crawl-delay (seconds) when set. */
  crawlDelaySec?: number;
  /** Added latency for robots.txt only (ms): a crawler's first fetch of each host then starts that much late. */
  robotsLatencyMs?: number;
  /** Called for every request as it arrives (before any added latency), with the epoch time in ms. */
  onRequest?: (path: string, host: string, atMs: number) => void;
}

type SiteTemplate = 'plain' | 'article';

/** The deterministic shape of a site (no server): shared by {@link startSite} and the child-process wrapper. */
export interface SiteGeometry {
  hosts: string[];
  pages: number;
  hostOf(n: number): string;
  url(n: number): string;
  linksOf(n: number): number[];
  reachable(seed: number, maxdepth: number, allowHost?: (host: string) => boolean): Set<number>;
  hostMap: string;
}

/** The geometry of a site with these options served on `port`. */
export function siteGeometry(options: SiteOptions, port: number): SiteGeometry {
  const pages = options.pages ?? 200;
  const links = options.links ?? 5;
  const hosts = options.hosts ?? ['site-a.test', 'site-b.test', 'www.site-c.test'];
  const hostOf = (n: number) => hosts[n % hosts.length] as string;
  const linksOf = (n: number) => Array.from({ length: links }, (_, k) => (n * 7 + k * 13 + 1) % pages);
  return {
    hosts,
    pages,
    hostOf,
    url: (n) => `http://${hostOf(n)}:${port}/p/${n}`,
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
  };
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

/** The links of the demo site's `/js` page, all written by its script (none in its HTML). */
export const JS_PAGE_LINKS = ['/js/0', '/js/1', '/js/2', '/js/3'];

const JS_PAGE =
  '<!doctype html><html><head><title>Built by script</title></head><body><ul id="links"></ul><script>' +
  'const add = (href) => { const a = document.createElement("a"); a.href = href; a.textContent = href;' +
  ' const li = document.createElement("li"); li.append(a); document.getElementById("links").append(li); };' +
  `${JSON.stringify(JS_PAGE_LINKS.slice(0, 2))}.forEach(add);` +
  'fetch("/js/links.json").then((r) => r.json()).then((paths) => paths.forEach(add));' +
  '</script></body></html>';

const FILLER = 'The quick brown fox jumps over the lazy dog while the crawler reads every word of it. ';

const WORDS = (
  'the of and to in is that for it as was with be by on not he this are or his from at which but have an they ' +
  'you were her all she there would their we him been has when who will more no if out so said what up its about ' +
  'into than them can only other new some could time these two may then do first any my now such like our over ' +
  'man me even most made after also did many before must through back years where much your way well down should ' +
  'because each just those people how too little state good very make world still own see men work long get here ' +
  'between both life being under never day same another know while last might us great old year off come since ' +
  'against go came right used take three city council garden market river harbour railway station library museum ' +
  'weather report season festival school hospital budget election transport bridge energy water housing project'
).split(' ');

/** Paragraph pool of the article template: plain text with inline markup, no links. */
const ARTICLE_PARAGRAPHS: string[] = (() => {
  const r = prng(0xa271c1e);
  const word = () => WORDS[Math.floor(r() * WORDS.length)] as string;
  const words = (n: number) => Array.from({ length: n }, word).join(' ');
  const inline = [
    (t: string) => `<strong>${t}</strong>`,
    (t: string) => `<em>${t}</em>`,
    (t: string) => `<span class="highlight">${t}</span>`,
    (t: string) => `<code>${t.replaceAll(' ', '_')}</code>`,
    (t: string) => `<abbr title="${t}">${t.slice(0, 3).toUpperCase()}</abbr>`,
  ];
  return Array.from({ length: 61 }, () => {
    const sentences: string[] = [];
    const count = 4 + Math.floor(r() * 5);
    for (let i = 0; i < count; i++) {
      let s = words(6 + Math.floor(r() * 10));
      const marks = Math.floor(r() * 3.2);
      for (let m = 0; m < marks; m++) {
        const wrap = inline[Math.floor(r() * inline.length)] as (t: string) => string;
        s += ` ${wrap(words(1 + Math.floor(r() * 3)))} ${words(2 + Math.floor(r() * 6))}`;
      }
      sentences.push(`${s.charAt(0).toUpperCase()}${s.slice(1)}.`);
    }
    return sentences.join(' ');
  });
})();

const ARTICLE_HEAD_EXTRA =
  '<meta name="viewport" content="width=device-width, initial-scale=1">' +
  '<link rel="stylesheet" href="/static/site.css"><link rel="icon" href="/favicon.ico">' +
  '<style>body{font-family:Georgia,serif;margin:0;color:#222}.container{max-width:960px;margin:0 auto;padding:0 16px}' +
  '.site-header{background:#0b3d91;color:#fff}.main-nav ul{list-style:none;display:flex;gap:12px}' +
  '.post-body p{line-height:1.6}.highlight{background:#ffef9f}.related li{margin:4px 0}table.specs td,table.specs th{padding:4px 8px}</style>' +
  '<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}gtag("js",new Date());</script>';

const ARTICLE_NAV = `<header class="site-header"><div class="container"><span class="logo">Fixture Daily</span><nav class="main-nav" aria-label="Main"><ul>${[
  'Home',
  'News',
  'City',
  'Culture',
  'Sport',
  'Weather',
  'Opinion',
  'About',
]
  .map((t) => `<li><span class="nav-item" data-section="${t.toLowerCase()}">${t}</span></li>`)
  .join('')}</ul></nav></div></header>`;

const ARTICLE_FOOTER =
  '<footer class="site-footer"><div class="container"><p>&copy; 2026 Fixture Daily. All rights reserved. ' +
  'Contact: <a href="mailto:someone@example.com">mail</a> &middot; <a href="/files/doc.pdf">pdf</a></p>' +
  '<p class="small">This page is generated for benchmarks; its text is random words.</p></div></footer>' +
  '<script>(function(){var s=document.createElement("script");s.async=true;s.src="/static/analytics.js";document.body.appendChild(s)})();</script>';

/**
 * An article page of about `pageBytes` (see the module doc): a share `inlineShare` of the links inline in paragraphs
 * (one every other paragraph, so many inline links make a page longer than `pageBytes`), the rest in a "related" list.
 */
export function articlePage(
  n: number,
  url: string,
  linkUrls: string[],
  targets: number[],
  pageBytes: number,
  inlineShare = 0.6,
): string {
  const title = `Page ${n}: ${ARTICLE_PARAGRAPHS[n % ARTICLE_PARAGRAPHS.length]?.split(' ').slice(0, 6).join(' ')}`;
  const head =
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title>` +
    `<meta name="description" content="Article ${n} of the fixture site."><link rel="canonical" href="${url}">` +
    `${ARTICLE_HEAD_EXTRA}<script type="application/ld+json">{"@context":"https://schema.org","@type":"NewsArticle","headline":"Page ${n}","datePublished":"2026-01-${String((n % 28) + 1).padStart(2, '0')}"}</script></head>`;
  const inlineCount = Math.ceil(linkUrls.length * inlineShare);
  const related = linkUrls
    .slice(inlineCount)
    .map((u, i) => `<li><a href="${u}" class="related-link">Page ${targets[inlineCount + i]}</a></li>`)
    .join('');
  const tail = `</div></article><aside class="related"><h2>Related</h2><ul>${related}</ul></aside></main>${ARTICLE_FOOTER}</body></html>`;
  const parts: string[] = [
    head,
    `<body class="article">${ARTICLE_NAV}<main class="container"><article class="post" id="post-${n}">`,
    `<h1 class="post-title">${title}</h1><p class="meta"><time datetime="2026-01-01T08:00:00Z">1 January 2026</time> by <span class="author">Staff ${n % 17}</span></p><div class="post-body">`,
  ];
  let size = parts.reduce((a, p) => a + p.length, 0) + tail.length + 400;
  let i = 0;
  let linked = 0;
  const pool = ARTICLE_PARAGRAPHS.length;
  while (size < pageBytes || linked < inlineCount) {
    let p = `<p>${ARTICLE_PARAGRAPHS[(n * 31 + i * 17) % pool]}`;
    if (linked < inlineCount && i % 2 === 0) {
      p += ` Read more in <a href="${linkUrls[linked]}">page ${targets[linked]}</a>.`;
      linked++;
    }
    p += '</p>';
    if (i % 9 === 4)
      p += `<figure><img src="/img/${n}-${i}.jpg" alt="Photo ${i} of page ${n}" width="800" height="450" loading="lazy"><figcaption>Photo ${i}.</figcaption></figure>`;
    if (i % 13 === 8)
      p += `<table class="specs"><tr><th>Item</th><th>Value</th></tr>${Array.from({ length: 4 }, (_, k) => `<tr><td>Row ${k}</td><td>${(n * 13 + k * 7) % 1000}</td></tr>`).join('')}</table>`;
    parts.push(p);
    size += p.length;
    i++;
  }
  parts.push(tail);
  return parts.join('');
}

/** The products of the fixture site's `/catalog` (`/products/<n>`, each with its JSON-LD). */
export const PRODUCTS = 6;

/** Product `n` as its JSON-LD states it. */
export function productOf(n: number): { name: string; sku: string; price: string; currency: string } {
  return { name: `Product ${n}`, sku: `SKU-${1000 + n}`, price: `${(9.5 + n).toFixed(2)}`, currency: 'EUR' };
}

function productPage(n: number): string {
  const p = productOf(n);
  const ld = {
    '@context': 'https://schema.org',
    '@type': 'Product',
    name: p.name,
    sku: p.sku,
    offers: { '@type': 'Offer', price: p.price, priceCurrency: p.currency },
  };
  return (
    `<!doctype html><html><head><title>${p.name}</title><script type="application/ld+json">${JSON.stringify(ld)}</script>` +
    `<script type="application/ld+json">{"@context":"https://schema.org","@type":"BreadcrumbList","itemListElement":[]}</script>` +
    `</head><body><h1>${p.name}</h1><a href="/catalog">catalog</a></body></html>`
  );
}

/** The pages the fixture site's sitemaps list (the first 10), half in the plain sitemap, half in the gzip one. */
export function sitemapPages(pages: number): number[] {
  return Array.from({ length: Math.min(pages, 10) }, (_, n) => n);
}

/** The `<lastmod>` of page `n` in the sitemaps. */
export function sitemapLastmod(n: number): string {
  return `2026-01-${String(n + 1).padStart(2, '0')}`;
}

export async function startSite(options: SiteOptions = {}): Promise<FixtureSite> {
  const pages = options.pages ?? 200;
  const hosts = options.hosts ?? ['site-a.test', 'site-b.test', 'www.site-c.test'];
  const pageBytes = options.pageBytes ?? 2000;
  const latency = options.latencyMs ?? 0;
  const template = options.template ?? 'plain';
  const onRequest = options.onRequest;
  const hits = new Map<string, number>();
  let port = 0;
  let geometry = siteGeometry(options, port);

  const hostOf = (n: number) => hosts[n % hosts.length] as string;
  const url = (n: number) => geometry.url(n);
  const linksOf = (n: number) => geometry.linksOf(n);
  const filler = FILLER.repeat(Math.ceil(pageBytes / FILLER.length)).slice(0, pageBytes);

  const page = (n: number) => {
    if (template === 'article') {
      const targets = linksOf(n);
      return articlePage(n, url(n), targets.map(url), targets, pageBytes);
    }
    return (
      `<!doctype html><html><head><meta charset="utf-8"><title>Page ${n}</title></head><body><h1>Page ${n}</h1>` +
      `<p>${filler}</p><ul>${linksOf(n)
        .map((m) => `<li><a href="${url(m)}">page ${m}</a></li>`)
        .join('')}</ul><a href="mailto:someone@example.com">mail</a> <a href="/files/doc.pdf">pdf</a></body></html>`
    );
  };

  const flaky = new Map<string, number>();
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0] as string;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    onRequest?.(path, (req.headers.host ?? '').split(':')[0] as string, Date.now());
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
      if (options.robotsLatencyMs) await sleep(options.robotsLatencyMs);
      res.writeHead(200, { 'content-type': 'text/plain' });
      const delay = options.crawlDelaySec !== undefined ? `Crawl-delay: ${options.crawlDelaySec}\n` : '';
      const sitemap = `Sitemap: http://${req.headers.host ?? '127.0.0.1'}/sitemap_index.xml\n`;
      return res.end(`User-agent: *\nDisallow: /private/\n${delay}${sitemap}`);
    }
    // Sitemaps (see sitemapUrls): an index of a plain and a gzip sitemap, each listing half the pages.
    if (path === '/sitemap_index.xml') {
      const origin = `http://${req.headers.host ?? '127.0.0.1'}`;
      res.writeHead(200, { 'content-type': 'application/xml' });
      return res.end(
        '<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">' +
          `<sitemap><loc>${origin}/sitemap-a.xml</loc></sitemap><sitemap><loc>${origin}/sitemap-b.xml.gz</loc><lastmod>2026-02-01</lastmod></sitemap>` +
          '</sitemapindex>',
      );
    }
    if (path === '/sitemap-a.xml' || path === '/sitemap-b.xml.gz') {
      const half = sitemapPages(pages);
      const listed =
        path === '/sitemap-a.xml' ? half.slice(0, Math.ceil(half.length / 2)) : half.slice(Math.ceil(half.length / 2));
      const xml =
        '<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">' +
        listed.map((n) => `<url><loc>${url(n)}</loc><lastmod>${sitemapLastmod(n)}</lastmod></url>`).join('') +
        '</urlset>';
      if (path === '/sitemap-a.xml') {
        res.writeHead(200, { 'content-type': 'application/xml' });
        return res.end(xml);
      }
      res.writeHead(200, { 'content-type': 'application/gzip' });
      return res.end(gzipSync(Buffer.from(xml)));
    }
    // Product pages with JSON-LD (schema.org Product), and a catalog that links to them.
    const product = path.match(/^\/products\/(\d+)$/);
    if (product) {
      const n = Number(product[1]);
      if (n >= PRODUCTS) return html(404, 'no such product');
      return html(200, productPage(n));
    }
    if (path === '/catalog') {
      const items = Array.from(
        { length: PRODUCTS },
        (_, n) => `<li><a href="/products/${n}">${productOf(n).name}</a></li>`,
      );
      return html(
        200,
        `<!doctype html><html><head><title>Catalog</title></head><body><ul>${items.join('')}</ul></body></html>`,
      );
    }
    // A page built by JavaScript (the browser spider's, docs/spiders-browser.md): no link in its HTML; its script
    // writes two and fetches the paths of two more.
    if (path === '/js') return html(200, JS_PAGE);
    if (path === '/js/links.json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify(JS_PAGE_LINKS.slice(2)));
    }
    if (/^\/js\/\d+$/.test(path)) return html(200, `<p>built by script: ${path}</p>`);
    if (path.startsWith('/private/')) return html(200, '<p>secret</p>');
    if (path === '/redirect') return html(302, '', { location: '/p/0' });
    if (path === '/redirect-private') return html(302, '', { location: 'http://169.254.169.254/latest/meta-data/' });
    // A chain of N redirects, each to the next (/chain/3 -> /chain/2 -> /chain/1 -> /chain/0 -> /p/0), ending at page 0
    // (on the host page 0 lives on).
    const chain = path.match(/^\/chain\/(\d+)$/);
    if (chain) {
      const n = Number(chain[1]);
      return html(302, '', { location: n > 0 ? `/chain/${n - 1}` : url(0) });
    }
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
    // Busy: the first request answers 503 with Retry-After: N (seconds), later ones 200.
    const busy = path.match(/^\/busy\/(\d+)$/);
    if (busy) {
      const seen = (flaky.get(path) ?? 0) + 1;
      flaky.set(path, seen);
      return seen === 1 ? html(503, 'busy', { 'retry-after': busy[1] as string }) : html(200, '<p>served</p>');
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
  geometry = siteGeometry(options, port);

  return {
    port,
    hosts,
    pages,
    url,
    linksOf,
    reachable: geometry.reachable,
    hostMap: geometry.hostMap,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

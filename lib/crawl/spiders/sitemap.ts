/**
 * The `sitemap` spider: finds a site's pages through its sitemaps and hands each page to another spider type.
 *
 * - Any page that is neither robots.txt nor a sitemap (the seed, usually the site's root): follows
 *   `<origin>/robots.txt`.
 * - `/robots.txt`: follows each `Sitemap:` line, or `<origin>/sitemap.xml` when there is none.
 * - A sitemap index: follows each sitemap in it (plain or gzip), as long as the nesting allows
 *   ({@link MAX_SITEMAP_NESTING} levels below robots.txt).
 * - A urlset: hands each URL to the spider type named by the crawl's `attrs.sitemap_spider` (default `link`), at
 *   the page's priority - 10.
 *
 * Each sitemap page's `data` is `{ sitemap: { kind, urls, truncated, error?, entries: [{ loc, lastmod? }] } }`:
 * every entry's `<lastmod>` (the entries listed as far as MAX_SITEMAP_DATA_BYTES allows, `urls` counting them all).
 * Bounds and hostile input: lib/crawl/extract/sitemap.ts. The spider bounds its own walk (the nesting), so the crawl's
 * `maxdepth` applies only to the spider the pages are handed to (with maxdepth 0, the listed pages and nothing more).
 */
import { Buffer } from 'node:buffer';
import {
  MAX_ROBOTS_SITEMAPS,
  parseSitemap,
  robotsSitemaps,
  type SitemapEntry,
  sitemapXml,
} from '../extract/sitemap.ts';
import type { FollowRequest, Spider, SpiderContext, SpiderResult } from '../types.ts';

/** Levels of sitemap below robots.txt that are followed: an index, a nested index, then its sitemaps. */
const MAX_SITEMAP_NESTING = 3;

/** The most bytes of entries listed in a sitemap page's `data` (the count covers them all). */
const MAX_SITEMAP_DATA_BYTES = 128 * 1024;

/** The spider type a crawl's pages are handed to: `attrs.sitemap_spider`, else `link`. */
export function sitemapTarget(attrs: Record<string, unknown> | undefined): string {
  const named = attrs?.sitemap_spider;
  return typeof named === 'string' && /^[A-Za-z0-9._-]{1,40}$/.test(named) ? named : 'link';
}

function looksLikeXml(context: SpiderContext): boolean {
  const type = context.response.headers['content-type']?.[0] ?? '';
  const path = new URL(context.response.url).pathname.toLowerCase();
  const body = context.response.body;
  return (
    /xml|gzip/i.test(type) ||
    path.endsWith('.xml') ||
    path.endsWith('.xml.gz') ||
    (body[0] === 0x1f && body[1] === 0x8b) ||
    /^\s*(<\?xml|<urlset|<sitemapindex)/.test(body.subarray(0, 256).toString('utf8'))
  );
}

function listed(entries: SitemapEntry[]): SitemapEntry[] {
  const out: SitemapEntry[] = [];
  let bytes = 0;
  for (const e of entries) {
    bytes += Buffer.byteLength(JSON.stringify(e)) + 1;
    if (bytes > MAX_SITEMAP_DATA_BYTES) break;
    out.push(e);
  }
  return out;
}

export const sitemapSpider: Spider = {
  name: 'sitemap',
  boundsItself: true,
  parse(context: SpiderContext): SpiderResult {
    const { request, response } = context;
    const url = new URL(response.url);
    const nested = request.depth;
    if (url.pathname === '/robots.txt') {
      const found = robotsSitemaps(response.text ?? '').slice(0, MAX_ROBOTS_SITEMAPS);
      const follow = (found.length > 0 ? found : [new URL('/sitemap.xml', url).href]).map((u) => ({ url: u }));
      return { data: { sitemap: { kind: 'robots', sitemaps: follow.map((f) => f.url) } }, follow };
    }
    if (!looksLikeXml(context)) {
      return nested === 0 ? { follow: [{ url: new URL('/robots.txt', url).href }] } : {};
    }
    const parsed = parseSitemap(sitemapXml(response.body, response.text));
    const data = {
      sitemap: {
        kind: parsed.kind,
        urls: parsed.entries.length,
        truncated: parsed.truncated,
        ...(parsed.error !== undefined ? { error: parsed.error } : {}),
        entries: listed(parsed.entries),
      },
    };
    let follow: FollowRequest[] = [];
    if (parsed.kind === 'sitemapindex') {
      // robots.txt is at depth 1 when the crawl starts at the site's root, 0 when it starts there.
      if (nested <= MAX_SITEMAP_NESTING) follow = parsed.entries.map((e) => ({ url: e.loc }));
    } else if (parsed.kind === 'urlset') {
      const spider = sitemapTarget(request.attrs ?? request.crawl.attrs);
      follow = parsed.entries.map((e) => ({ url: e.loc, spider }));
    }
    return { data, follow };
  },
};

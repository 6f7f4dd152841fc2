/**
 * Sitemaps (lib/crawl/extract/sitemap.ts) and the `sitemap` spider (lib/crawl/spiders/sitemap.ts): robots.txt lines,
 * indexes, gzip, `<lastmod>`, the bounds, and hostile XML (no entity expansion).
 */
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { parseSitemap, robotsSitemaps, SitemapError, sitemapXml } from '../../lib/crawl/extract/sitemap.ts';
import { sitemapSpider, sitemapTarget } from '../../lib/crawl/spiders/sitemap.ts';
import type { FetchResult, SpiderResult } from '../../lib/crawl/types.ts';

const urlset = (locs: string[]) =>
  `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${locs
    .map((l, i) => `<url><loc> ${l} </loc><lastmod>2026-01-0${(i % 9) + 1}</lastmod></url>`)
    .join('')}</urlset>`;

function response(url: string, body: Buffer | string, type: string): FetchResult {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body);
  return {
    requestUrl: url,
    url,
    status: 200,
    statusText: 'OK',
    headers: { 'content-type': [type] },
    requestHeaders: {},
    body: bytes,
    text: /xml|text/.test(type) ? bytes.toString('utf8') : undefined,
    encoding: 'utf-8',
    truncated: false,
    redirects: [],
    fetchedMs: 1,
  };
}

function run(r: FetchResult, depth = 1, attrs?: Record<string, unknown>): SpiderResult {
  const crawl = { appid: 'app', crawlid: 'c', spiderid: 'sitemap', priority: 1, maxdepth: 0, expires: 0, attrs };
  const result = sitemapSpider.parse({
    request: { url: r.url, depth, priority: 1, retries: 0, crawl, attrs, spider: 'sitemap' },
    response: r,
    links: [],
    $: () => {
      throw new Error('the sitemap spider needs no DOM');
    },
  });
  return result as SpiderResult;
}

describe('parseSitemap', () => {
  it('reads a urlset’s locations and lastmods, trimmed, namespaced or prefixed', () => {
    expect(parseSitemap(urlset(['http://a.example/1', 'http://a.example/2']))).toEqual({
      kind: 'urlset',
      entries: [
        { loc: 'http://a.example/1', lastmod: '2026-01-01' },
        { loc: 'http://a.example/2', lastmod: '2026-01-02' },
      ],
      truncated: false,
    });
    const prefixed =
      '<sm:sitemapindex xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9"><sm:sitemap><sm:loc><![CDATA[http://a.example/s.xml]]></sm:loc></sm:sitemap></sm:sitemapindex>';
    expect(parseSitemap(prefixed)).toEqual({
      kind: 'sitemapindex',
      entries: [{ loc: 'http://a.example/s.xml' }],
      truncated: false,
    });
  });

  it('stops at the entry bound and says so', () => {
    const parsed = parseSitemap(urlset(Array.from({ length: 10 }, (_, i) => `http://a.example/${i}`)), 3);
    expect(parsed.entries).toHaveLength(3);
    expect(parsed.truncated).toBe(true);
  });

  it('expands no entity: a billion-laughs document yields an error and no text, an external entity no file', () => {
    const laughs =
      '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">' +
      '<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>' +
      '<urlset><url><loc>http://a.example/&lol3;</loc></url></urlset>';
    const bomb = parseSitemap(laughs);
    expect(bomb.entries).toEqual([]);
    expect(bomb.error).toMatch(/entity/i);
    const xxe =
      '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><urlset><url><loc>&xxe;</loc></url></urlset>';
    expect(parseSitemap(xxe).entries).toEqual([]);
  });

  it('keeps the entries before malformed XML and reports the error', () => {
    const parsed = parseSitemap('<urlset><url><loc>http://a.example/1</loc></url><url><loc>http://a.example/2</lo');
    expect(parsed.entries).toEqual([{ loc: 'http://a.example/1' }]);
    expect(parsed.kind).toBe('urlset');
  });
});

describe('sitemapXml', () => {
  it('gunzips a gzip sitemap, and refuses one over the bound uncompressed (a gzip bomb)', () => {
    expect(sitemapXml(gzipSync(Buffer.from('<urlset/>')), undefined)).toBe('<urlset/>');
    const bomb = gzipSync(Buffer.alloc(5_000_000, 0x20));
    expect(bomb.length).toBeLessThan(10_000);
    expect(() => sitemapXml(bomb, undefined, 1_000_000)).toThrow(SitemapError);
    expect(() => sitemapXml(Buffer.from([0x1f, 0x8b, 1, 2, 3]), undefined)).toThrow('cannot be decompressed');
  });
});

describe('robotsSitemaps', () => {
  it('reads every Sitemap line, any case', () => {
    expect(
      robotsSitemaps(
        'User-agent: *\nDisallow: /x\nSitemap: http://a.example/s1.xml\r\nsitemap:http://a.example/s2.xml.gz\n',
      ),
    ).toEqual(['http://a.example/s1.xml', 'http://a.example/s2.xml.gz']);
  });
});

describe('the sitemap spider', () => {
  it('goes from a site’s page to its robots.txt, and from robots.txt to its sitemaps (or /sitemap.xml)', () => {
    expect(run(response('http://a.example/', '<html></html>', 'text/html'), 0).follow).toEqual([
      { url: 'http://a.example/robots.txt' },
    ]);
    const robots = run(response('http://a.example/robots.txt', 'Sitemap: http://a.example/index.xml\n', 'text/plain'));
    expect(robots.follow).toEqual([{ url: 'http://a.example/index.xml' }]);
    expect(run(response('http://a.example/robots.txt', 'User-agent: *\n', 'text/plain')).follow).toEqual([
      { url: 'http://a.example/sitemap.xml' },
    ]);
  });

  it('follows an index’s sitemaps itself, up to its nesting bound', () => {
    const index = '<sitemapindex><sitemap><loc>http://a.example/a.xml.gz</loc></sitemap></sitemapindex>';
    expect(run(response('http://a.example/i.xml', index, 'application/xml'), 2).follow).toEqual([
      { url: 'http://a.example/a.xml.gz' },
    ]);
    expect(run(response('http://a.example/i.xml', index, 'application/xml'), 4).follow).toEqual([]);
  });

  it('hands a urlset’s pages to attrs.sitemap_spider (default link), with every lastmod in data, gzip too', () => {
    const xml = urlset(['http://a.example/1', 'http://a.example/2']);
    const gz = run(response('http://a.example/a.xml.gz', gzipSync(Buffer.from(xml)), 'application/gzip'), 2, {
      sitemap_spider: 'products',
    });
    expect(gz.follow).toEqual([
      { url: 'http://a.example/1', spider: 'products' },
      { url: 'http://a.example/2', spider: 'products' },
    ]);
    expect(gz.data).toEqual({
      sitemap: {
        kind: 'urlset',
        urls: 2,
        truncated: false,
        entries: [
          { loc: 'http://a.example/1', lastmod: '2026-01-01' },
          { loc: 'http://a.example/2', lastmod: '2026-01-02' },
        ],
      },
    });
    expect(run(response('http://a.example/a.xml', xml, 'text/xml'), 2).follow?.[0]).toEqual({
      url: 'http://a.example/1',
      spider: 'link',
    });
    expect(sitemapTarget({ sitemap_spider: 'bad name' })).toBe('link');
  });
});

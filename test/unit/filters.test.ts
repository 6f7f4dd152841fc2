import { describe, expect, it } from 'vitest';
import {
  compileLinkFilter,
  compileLinkRules,
  followable,
  IGNORED_EXTENSIONS,
  LINK_FILTER_CACHE_SIZE,
  linkFilter,
  shouldFollow,
} from '../../lib/crawl/extract/filters.ts';
import type { CrawlSettings } from '../../lib/frontier-model.ts';

function settings(rules: Partial<CrawlSettings> = {}): CrawlSettings {
  return { appid: 'app', crawlid: 'c1', spiderid: 'link', priority: 1, maxdepth: 1, expires: 0, ...rules };
}

describe('allowed_domains', () => {
  const allowed = linkFilter(settings({ allowed_domains: ['example.com'] }));

  it('allows the domain itself and its subdomains at any depth', () => {
    expect(allowed('http://example.com/')).toBe(true);
    expect(allowed('https://www.example.com/a')).toBe(true);
    expect(allowed('http://a.b.example.com/x?y=1')).toBe(true);
  });

  it('denies look-alike domains that merely end with the same letters or contain them', () => {
    expect(allowed('http://notexample.com/')).toBe(false);
    expect(allowed('http://example.com.evil.net/')).toBe(false);
    expect(allowed('http://example.co/')).toBe(false);
    expect(allowed('http://evil.net/?u=http://example.com/')).toBe(false);
  });

  it('compares host names case-insensitively, ignoring ports, userinfo and a trailing dot', () => {
    expect(allowed('http://WWW.Example.COM/')).toBe(true);
    expect(allowed('http://www.example.com:8080/')).toBe(true);
    expect(allowed('http://user:pw@www.example.com/')).toBe(true);
    expect(allowed('http://www.example.com./')).toBe(true);
    expect(allowed('http://example.com@evil.net/')).toBe(false);
  });

  it('normalizes the configured domains: case, leading dot, IDN as punycode', () => {
    const f = compileLinkFilter({ allowed_domains: ['.Example.COM', 'bücher.de'] });
    expect(f('http://shop.example.com/')).toBe(true);
    expect(f('http://xn--bcher-kva.de/')).toBe(true);
    expect(f('http://www.xn--bcher-kva.de/x')).toBe(true);
  });

  it('allows a link to any of several domains', () => {
    const f = compileLinkFilter({ allowed_domains: ['a.example', 'b.example'] });
    expect(f('http://x.b.example/')).toBe(true);
    expect(f('http://c.example/')).toBe(false);
  });

  it('allows every domain when the list is absent or empty', () => {
    expect(linkFilter(settings())('http://anything.example.net/')).toBe(true);
    expect(compileLinkFilter({ allowed_domains: [] })('http://anything.example.net/')).toBe(true);
  });
});

describe('allow_regex and deny_regex', () => {
  it('requires a match of at least one allow regex anywhere in the URL', () => {
    const f = compileLinkFilter({ allow_regex: ['/articles/', 'page=\\d+$'] });
    expect(f('http://example.com/articles/1')).toBe(true);
    expect(f('http://example.com/list?page=3')).toBe(true);
    expect(f('http://example.com/about')).toBe(false);
  });

  it('denies a link that matches a deny regex', () => {
    const f = compileLinkFilter({ deny_regex: ['logout', '\\?sort='] });
    expect(f('http://example.com/logout')).toBe(false);
    expect(f('http://example.com/list?sort=asc')).toBe(false);
    expect(f('http://example.com/list')).toBe(true);
  });

  it('lets deny win over allow when both match', () => {
    const f = compileLinkFilter({ allow_regex: ['/articles/'], deny_regex: ['/articles/draft'] });
    expect(f('http://example.com/articles/1')).toBe(true);
    expect(f('http://example.com/articles/draft-2')).toBe(false);
  });

  it('matches regexes case-sensitively, as written', () => {
    const f = compileLinkFilter({ deny_regex: ['/Private'] });
    expect(f('http://example.com/Private/x')).toBe(false);
    expect(f('http://example.com/private/x')).toBe(true);
    expect(compileLinkFilter({ deny_regex: ['/[Pp]rivate'] })('http://example.com/private')).toBe(false);
  });

  it('combines with allowed_domains: both must pass', () => {
    const f = compileLinkFilter({ allowed_domains: ['example.com'], allow_regex: ['/news/'] });
    expect(f('http://example.com/news/1')).toBe(true);
    expect(f('http://other.net/news/1')).toBe(false);
    expect(f('http://example.com/sports/1')).toBe(false);
  });

  it('throws on a regex that does not compile (validation rejects such crawls earlier)', () => {
    expect(() => compileLinkFilter({ allow_regex: ['(unclosed'] })).toThrow(/missing closing \)/);
  });

  it('matches a catastrophic-backtracking pattern in linear time (RE2), so a hostile crawl cannot pin a worker', () => {
    // (a+)+$ against 10,000 a's and a '!' takes exponential time in a backtracking engine: this would not return.
    const follow = compileLinkFilter({ deny_regex: ['(a+)+$'], deny_extensions: [] });
    expect(follow(`http://example.com/${'a'.repeat(10_000)}!`)).toBe(true);
    expect(follow('http://example.com/aaa')).toBe(false);
  });

  it('honours inline flags such as (?i), as Python did for Scrapy Cluster', () => {
    const follow = compileLinkFilter({ allow_regex: ['(?i)/PRODUCTS/'] });
    expect(follow('http://example.com/products/1')).toBe(true);
  });
});

describe('deny_extensions', () => {
  const byDefault = linkFilter(settings());

  it('denies Scrapy’s default binary and media extensions', () => {
    for (const url of [
      'http://example.com/a.pdf',
      'http://example.com/img/photo.jpg',
      'http://example.com/archive.zip',
      'http://example.com/backup.tar.gz',
      'http://example.com/movie.webm',
      'http://example.com/sheet.xlsx',
      'http://example.com/app.js',
    ]) {
      expect(byDefault(url), url).toBe(false);
    }
  });

  it('has Scrapy’s list of extensions, each lower-case without a dot', () => {
    expect(IGNORED_EXTENSIONS).toHaveLength(new Set(IGNORED_EXTENSIONS).size);
    expect(IGNORED_EXTENSIONS).toEqual(expect.arrayContaining(['7z', 'tar.gz', 'png', 'mp3', 'mp4', 'docx', 'pdf']));
    expect(IGNORED_EXTENSIONS.every((e) => e === e.toLowerCase() && !e.startsWith('.'))).toBe(true);
  });

  it('matches the extension case-insensitively', () => {
    expect(byDefault('http://example.com/REPORT.PDF')).toBe(false);
    expect(byDefault('http://example.com/Photo.JpEg')).toBe(false);
  });

  it('looks at the path only: query, fragment, params and directories do not count', () => {
    expect(byDefault('http://example.com/page.html')).toBe(true);
    expect(byDefault('http://example.com/view?file=a.pdf')).toBe(true);
    expect(byDefault('http://example.com/page#x.pdf')).toBe(true);
    expect(byDefault('http://example.com/a.pdf/view')).toBe(true);
    expect(byDefault('http://example.com/a.pdf?download=1')).toBe(false);
    expect(byDefault('http://example.com/a.pdf;jsessionid=1')).toBe(false);
    expect(byDefault('http://example.pdf/')).toBe(true);
    expect(byDefault('http://example.com/')).toBe(true);
  });

  it('does not deny a path whose name merely ends with the letters of an extension', () => {
    expect(byDefault('http://example.com/topdf')).toBe(true);
    expect(byDefault('http://example.com/gzip')).toBe(true);
  });

  it('replaces the default list with the request’s list', () => {
    const f = linkFilter(settings({ deny_extensions: ['html', '.PHP'] }));
    expect(f('http://example.com/a.html')).toBe(false);
    expect(f('http://example.com/index.php')).toBe(false);
    expect(f('http://example.com/a.pdf')).toBe(true);
    expect(f('http://example.com/photo.jpg')).toBe(true);
  });

  it('denies no extension when the request’s list is empty', () => {
    expect(linkFilter(settings({ deny_extensions: [] }))('http://example.com/a.pdf')).toBe(true);
  });

  it('matches multi-part extensions of a replaced list only as a whole suffix', () => {
    const f = compileLinkFilter({ deny_extensions: ['tar.gz'] });
    expect(f('http://example.com/a.tar.gz')).toBe(false);
    expect(f('http://example.com/a.gz')).toBe(true);
  });
});

describe('linkFilter cache', () => {
  it('shares one filter among crawls with no rules (empty lists count as none), and one among those denying nothing', () => {
    const none = linkFilter(settings({ crawlid: 'x' }));
    expect(linkFilter(settings({ crawlid: 'y', allowed_domains: [], allow_regex: [], deny_regex: [] }))).toBe(none);
    expect(none('http://example.com/a.pdf')).toBe(false);
    expect(none('http://example.com/a.html')).toBe(true);
    const open = linkFilter(settings({ deny_extensions: [] }));
    expect(linkFilter(settings({ crawlid: 'z', deny_extensions: [], allow_regex: [] }))).toBe(open);
    expect(open).not.toBe(none);
    expect(open('http://example.com/a.pdf')).toBe(true);
    // Any rule leaves the shared ones.
    const domains = linkFilter(settings({ allowed_domains: ['example.com'], deny_extensions: [] }));
    expect(domains).not.toBe(open);
    expect(domains('http://other.example.org/a')).toBe(false);
  });

  it('returns the same compiled filter for the same rules, and another for other rules', () => {
    const a = linkFilter(settings({ crawlid: 'x', allow_regex: ['/same/'] }));
    const b = linkFilter(settings({ crawlid: 'y', allow_regex: ['/same/'] }));
    const c = linkFilter(settings({ crawlid: 'x', allow_regex: ['/other/'] }));
    expect(b).toBe(a);
    expect(c).not.toBe(a);
    expect(c('http://example.com/other/1')).toBe(true);
  });

  it('evicts the least recently used rules beyond its size, recompiling them on the next call', () => {
    const first = linkFilter(settings({ deny_regex: ['evict-me'] }));
    for (let i = 0; i < LINK_FILTER_CACHE_SIZE; i++) linkFilter(settings({ deny_regex: [`filler-${i}`] }));
    expect(linkFilter(settings({ deny_regex: ['evict-me'] }))).not.toBe(first);
  });

  it('keeps rules that are used often while others come and go', () => {
    const hot = linkFilter(settings({ deny_regex: ['hot'] }));
    for (let i = 0; i < LINK_FILTER_CACHE_SIZE * 2; i++) {
      linkFilter(settings({ deny_regex: [`cold-${i}`] }));
      expect(linkFilter(settings({ deny_regex: ['hot'] }))).toBe(hot);
    }
  });
});

describe('shouldFollow', () => {
  it('follows links while the depth is below maxdepth', () => {
    expect(shouldFollow(0, 1)).toBe(true);
    expect(shouldFollow(2, 3)).toBe(true);
  });

  it('does not follow at or beyond maxdepth, so maxdepth 0 crawls the seed only', () => {
    expect(shouldFollow(0, 0)).toBe(false);
    expect(shouldFollow(1, 1)).toBe(false);
    expect(shouldFollow(3, 2)).toBe(false);
  });
});

describe('the rule that keeps a link', () => {
  it('names the first rule a link fails, in the order domains, allow, deny, extensions', () => {
    const rules = compileLinkRules({
      allowed_domains: ['example.com'],
      allow_regex: ['/docs/'],
      deny_regex: ['/docs/old/'],
    });
    expect(rules('http://other.test/docs/a.pdf')).toBe('allowed_domains');
    expect(rules('http://example.com/blog/a')).toBe('allow_regex');
    expect(rules('http://example.com/docs/old/a')).toBe('deny_regex');
    expect(rules('http://example.com/docs/a.pdf')).toBe('deny_extensions');
    expect(rules('http://example.com/docs/a')).toBeUndefined();
  });

  it('followable keeps the links let through in order and counts the others by rule', () => {
    const skipped = {};
    const links = ['http://a.test/1', 'http://a.test/f.pdf', 'http://b.test/2', 'http://a.test/z.zip'].map((url) => ({
      url,
    }));
    const kept = followable(settings({ allowed_domains: ['a.test'] }), links, skipped);
    expect(kept.map((l) => l.url)).toEqual(['http://a.test/1']);
    expect(skipped).toEqual({ deny_extensions: 2, allowed_domains: 1 });
  });
});

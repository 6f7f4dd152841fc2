import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { extractLinks } from '../../lib/crawl/extract.ts';

function fixture(name: string): string {
  return readFileSync(new URL(`../fixtures/html/${name}`, import.meta.url), 'utf8');
}

const PAGE = 'http://www.example.com/dir/page.html?q=1#frag';

describe('extractLinks on links.html', () => {
  const links = extractLinks(fixture('links.html'), PAGE);
  const urls = links.map((l) => l.url);
  const textOf = (url: string) => links.find((l) => l.url === url)?.text;

  it('resolves relative, parent, query-only and protocol-relative hrefs against the page URL', () => {
    expect(urls).toEqual(
      expect.arrayContaining([
        'http://www.example.com/about',
        'http://www.example.com/dir/contact.html',
        'http://www.example.com/up/one.html',
        'http://www.example.com/dir/page.html?page=2',
        'http://cdn.example.org/lib.html',
      ]),
    );
  });

  it('decodes entities in hrefs and keeps absolute links to other sites', () => {
    expect(urls).toContain('https://other.example.net/path?x=1&y=2');
  });

  it('drops fragments, so a fragment-only href is the page itself and two fragments of one page are one link', () => {
    expect(urls).toContain('http://www.example.com/dir/page.html?q=1');
    expect(urls.filter((u) => u.startsWith('http://www.example.com/guide'))).toEqual(['http://www.example.com/guide']);
    expect(textOf('http://www.example.com/guide')).toBe('Install guide');
    expect(urls.every((u) => !u.includes('#'))).toBe(true);
  });

  it('drops javascript:, mailto:, tel:, data: and ftp: links and anchors without href', () => {
    expect(urls.every((u) => u.startsWith('http://') || u.startsWith('https://'))).toBe(true);
    expect(links.some((l) => /javascript|mailto|tel:|data:|ftp:/i.test(l.url))).toBe(false);
    expect(links.some((l) => l.text === 'No href')).toBe(false);
  });

  it('keeps a duplicate URL once, with the text of its first occurrence', () => {
    expect(urls.filter((u) => u === 'http://www.example.com/about')).toHaveLength(1);
    expect(textOf('http://www.example.com/about')).toBe('About us');
  });

  it('collapses whitespace runs in link text and trims it', () => {
    expect(textOf('http://www.example.com/spaced')).toBe('Lots of whitespace here');
  });

  it('joins the text of nested elements and gives an image-only link empty text', () => {
    expect(textOf('http://www.example.com/nested')).toBe('Nested text');
    expect(textOf('http://www.example.com/image')).toBe('');
  });

  it('trims spaces around an href', () => {
    expect(urls).toContain('http://www.example.com/trimmed');
  });

  it('reads upper-case tags and attributes, keeping the path case', () => {
    expect(textOf('http://www.example.com/UPPER')).toBe('Upper-case tag');
  });

  it('takes area links with their alt text, collapsed, and ignores areas without href', () => {
    expect(textOf('http://www.example.com/area-one')).toBe('Area one');
    expect(textOf('http://www.example.com/area-two')).toBe('');
    expect(links.some((l) => l.text === 'no href')).toBe(false);
  });

  it('ignores link elements in the head (stylesheets are not page links)', () => {
    expect(urls).not.toContain('http://www.example.com/style.css');
  });

  it('returns the links in document order', () => {
    expect(urls.slice(0, 3)).toEqual([
      'http://www.example.com/about',
      'http://www.example.com/dir/contact.html',
      'http://www.example.com/up/one.html',
    ]);
    expect(urls.at(-1)).toBe('http://www.example.com/area-two');
  });
});

describe('extractLinks with <base href>', () => {
  const links = extractLinks(fixture('base-href.html'), PAGE);

  it('resolves links against the first base href, itself resolved against the page URL', () => {
    expect(links).toEqual([
      { url: 'http://www.example.com/docs/v2/intro.html', text: 'Intro' },
      { url: 'http://www.example.com/docs/v1/old.html', text: 'Old docs' },
      { url: 'http://www.example.com/root.html', text: 'Root' },
      { url: 'https://elsewhere.example.org/', text: 'Elsewhere' },
    ]);
  });

  it('falls back to the page URL when the base href does not parse', () => {
    const html = '<base href="http://[broken/"><a href="x.html">x</a>';
    expect(extractLinks(html, PAGE)).toEqual([{ url: 'http://www.example.com/dir/x.html', text: 'x' }]);
  });

  it('uses an absolute base href on another host', () => {
    const html = '<head><base href="https://mirror.example.org/a/"></head><a href="b">b</a>';
    expect(extractLinks(html, PAGE)).toEqual([{ url: 'https://mirror.example.org/a/b', text: 'b' }]);
  });
});

describe('extractLinks on malformed markup', () => {
  const links = extractLinks(fixture('malformed.html'), PAGE);
  const urls = links.map((l) => l.url);

  it('finds links with unquoted and single-quoted hrefs, in tables and with attribute noise', () => {
    expect(urls).toEqual(
      expect.arrayContaining([
        'http://www.example.com/unquoted',
        'http://www.example.com/single',
        'http://www.example.com/after-unclosed',
        'http://www.example.com/in-table',
        'http://www.example.com/attr-noise',
      ]),
    );
  });

  it('does not give an unclosed anchor the text of the anchor that follows it', () => {
    expect(links.find((l) => l.url === 'http://www.example.com/single')?.text).toBe('Single quotes');
    expect(links.find((l) => l.url === 'http://www.example.com/after-unclosed')?.text).toBe('After an unclosed anchor');
  });

  it('percent-encodes non-ASCII and spaces in paths, as the WHATWG URL parser does', () => {
    expect(urls).toContain('http://www.example.com/%C3%BCn%C3%AFcode%20path');
  });

  it('skips hrefs that do not parse, commented-out anchors and markup inside scripts', () => {
    expect(urls.some((u) => u.includes('invalid-host'))).toBe(false);
    expect(urls).not.toContain('http://www.example.com/commented');
    expect(urls).not.toContain('http://www.example.com/in-script');
  });

  it('returns nothing for empty input, plain text or a page URL that does not parse', () => {
    expect(extractLinks('', PAGE)).toEqual([]);
    expect(extractLinks('just text, no markup', PAGE)).toEqual([]);
    expect(extractLinks('<a href="/x">x</a>', 'not a url')).toEqual([]);
  });

  it('keeps a link whose href is empty as the page itself', () => {
    expect(extractLinks('<a href="">self</a>', PAGE)).toEqual([
      { url: 'http://www.example.com/dir/page.html?q=1', text: 'self' },
    ]);
  });
});

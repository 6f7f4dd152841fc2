import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { extractLinks, extractPageLinks } from '../../lib/crawl/extract/links.ts';

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

  it('cuts the fragment at its first #: an empty one, one holding another #, one after a query, none before it', () => {
    const page = [
      '<a href="/a#">empty</a>',
      '<a href="/b?q=1#x#y">two</a>',
      '<a href="/c?q=%23#top">encoded</a>',
      '<a href="http://u#@evil.example/d">userinfo</a>',
      '<a href="/e#f">plain</a>',
    ].join('');
    expect(extractLinks(page, 'http://h.example/p').map((l) => l.url)).toEqual([
      'http://h.example/a',
      'http://h.example/b?q=1',
      'http://h.example/c?q=%23',
      'http://u/',
      'http://h.example/e',
    ]);
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

describe('extractLinks text and resolution details', () => {
  it('decodes entities in link text and hrefs, and collapses a decoded no-break space like any whitespace', () => {
    const html = '<a href="/caf&eacute;?a=1&amp;b=2&lt;">Caf&eacute;&nbsp;&amp;&#x20;&#128512; bar</a>';
    expect(extractLinks(html, PAGE)).toEqual([
      { url: 'http://www.example.com/caf%C3%A9?a=1&b=2%3C', text: 'Café & 😀 bar' },
    ]);
  });

  it('collapses exactly the characters /\\s/ matches, as trimming and collapsing the joined text did', () => {
    const units = Array.from({ length: 0x10000 }, (_, c) => String.fromCharCode(c)).filter(
      (ch) => ch !== '<' && ch !== '&',
    );
    const html = units.map((ch, i) => `<a href="/w${i}">x${ch}y</a>`).join('');
    const texts = extractLinks(html, PAGE, { maxLinks: units.length }).map((l) => l.text);
    expect(texts).toEqual(units.map((ch) => `x${ch}y`.replace(/\s+/g, ' ')));
  });

  it("leaves script and style bodies and nested anchors out of a link's text", () => {
    const html =
      '<a href="/outer">one<script>var a = "<b>no</b>";</script><style>.x{}</style> two<a href="/inner">inner</a></a>';
    expect(extractLinks(html, PAGE)).toEqual([
      { url: 'http://www.example.com/outer', text: 'one two' },
      { url: 'http://www.example.com/inner', text: 'inner' },
    ]);
  });

  it('gives an unclosed anchor the text after a nested anchor closes, as the htmlparser2 tree nested them', () => {
    const html = '<p><a href="/open">open <a href="/inner">inner</a> after</p> outside';
    expect(extractLinks(html, PAGE)).toEqual([
      { url: 'http://www.example.com/open', text: 'open after' },
      { url: 'http://www.example.com/inner', text: 'inner' },
    ]);
  });

  it('resolves links before a late <base href> against it too, as the first base applies to the whole page', () => {
    const html = '<a href="one">1</a><a href="/dir/two">2</a><base href="/other/"><a href="two">2 again</a>';
    expect(extractLinks(html, PAGE)).toEqual([
      { url: 'http://www.example.com/other/one', text: '1' },
      { url: 'http://www.example.com/dir/two', text: '2' },
      { url: 'http://www.example.com/other/two', text: '2 again' },
    ]);
  });

  it('cuts link text and area alt text to maxLinkTextChars, never between the halves of a surrogate pair', () => {
    const html = '<a href="/a">abc   def ghi</a><a href="/b">abc😀</a><area href="/c" alt="  alt   text here ">';
    expect(extractLinks(html, PAGE, { maxLinkTextChars: 4 })).toEqual([
      { url: 'http://www.example.com/a', text: 'abc' },
      { url: 'http://www.example.com/b', text: 'abc' },
      { url: 'http://www.example.com/c', text: 'alt' },
    ]);
    expect(extractLinks(html, PAGE, { maxLinkTextChars: 7 })[0]?.text).toBe('abc def');
  });

  it('says nothing about stopping when it read the whole page', () => {
    expect(extractPageLinks(fixture('links.html'), PAGE)).toEqual({ links: extractLinks(fixture('links.html'), PAGE) });
    expect(Object.keys(extractPageLinks('<a href="/x">x</a>', PAGE))).toEqual(['links']);
  });
});

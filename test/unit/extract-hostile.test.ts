import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_LINKS, extractLinks, extractPageLinks } from '../../lib/crawl/extract/links.ts';

// Pages built to hang, exhaust or crash a worker (docs/design.md §10). Wall time is never asserted: the time
// budget is tested with an injected clock, and the big pages use an unlimited budget so a slow machine
// cannot turn them into a different test (only the test timeouts bound them). The cheerio DOM this
// replaced ran over 5 minutes on each million-<div> page, overflowed the stack after 25 s on the 200,000
// <span>s and took 22 s on the unclosed anchors.

const PAGE = 'http://www.example.com/dir/page.html';
const UNBOUNDED_TIME = { budgetMs: Number.POSITIVE_INFINITY };
// Generous for a linear pass over ~10 MB; the old quadratic DOM build needed minutes.
const BIG = 30_000;
// For pages the old build needed 20-25 s for (a linear pass takes well under 1 s).
const LINEAR = 10_000;

describe('extractPageLinks on hostile pages', () => {
  it(
    'finds the link under 1,000,000 nested <div>s, reading the whole page',
    () => {
      const html = `${'<div>'.repeat(1_000_000)}<a href="/bottom">at the bottom</a>`;
      expect(extractPageLinks(html, PAGE, UNBOUNDED_TIME)).toEqual({
        links: [{ url: 'http://www.example.com/bottom', text: 'at the bottom' }],
      });
    },
    BIG,
  );

  it(
    'reads 200,000 <span>s inside one <a> without overflowing the stack, cutting its text to maxLinkTextChars',
    () => {
      const html = `<a href="/deep">${'<span>word '.repeat(200_000)}</a><a href="/next">next</a>`;
      const { links, stopped } = extractPageLinks(html, PAGE, { ...UNBOUNDED_TIME, maxLinkTextChars: 1_000 });
      expect(stopped).toBeUndefined();
      // 200 five-character "word " fill 1,000 characters exactly; the cut leaves no trailing space.
      expect(links).toEqual([
        { url: 'http://www.example.com/deep', text: 'word '.repeat(200).trimEnd() },
        { url: 'http://www.example.com/next', text: 'next' },
      ]);
    },
    BIG,
  );

  it(
    'gets through 1,000,000 <div>s followed by 1,000,000 unmatched </span>s (no per-tag scan of the open elements)',
    () => {
      const html = `${'<div>'.repeat(1_000_000)}${'</span>'.repeat(1_000_000)}<a href="/end">end</a>`;
      expect(extractPageLinks(html, PAGE, UNBOUNDED_TIME)).toEqual({
        links: [{ url: 'http://www.example.com/end', text: 'end' }],
      });
    },
    BIG,
  );

  it(
    'gives each of 200,000 unclosed <a>s in sequence its own text, not the text of the anchors after it',
    () => {
      // Each unclosed anchor nests in the one before: the old DOM build was quadratic in that depth (22 s).
      const count = 200_000;
      const html = Array.from({ length: count }, (_, i) => `<a href="/${i}">link ${i}\n`).join('');
      const { links, stopped } = extractPageLinks(html, PAGE, { ...UNBOUNDED_TIME, maxLinks: count });
      expect(stopped).toBeUndefined();
      expect(links).toHaveLength(count);
      expect(links[0]).toEqual({ url: 'http://www.example.com/0', text: 'link 0' });
      expect(links.at(-1)).toEqual({ url: `http://www.example.com/${count - 1}`, text: `link ${count - 1}` });
      expect(links.every((l, i) => l.text === `link ${i}`)).toBe(true);
    },
    LINEAR,
  );

  it('stops at maxLinks distinct links and says so', () => {
    const html = Array.from({ length: 50_000 }, (_, i) => `<li><a href="/p/${i}">page ${i}</a></li>`).join('');
    const { links, stopped } = extractPageLinks(html, PAGE, { ...UNBOUNDED_TIME, maxLinks: 10_000 });
    expect(links).toHaveLength(10_000);
    expect(links.at(-1)).toEqual({ url: 'http://www.example.com/p/9999', text: 'page 9999' });
    expect(stopped).toBe('link extraction stopped at 10000 links');
  });

  it('says a page cut at maxLinks has more than that many links; a page cut by the time budget does not', () => {
    const html = Array.from({ length: 8 }, (_, i) => `<a href="/p/${i}">page ${i}</a>`).join('');
    const cut = extractPageLinks(html, PAGE, { maxLinks: 5 });
    expect(cut.links).toHaveLength(5);
    expect(cut.moreThan).toBe(5);
    expect(extractPageLinks(html, PAGE).moreThan).toBeUndefined();
    expect(DEFAULT_MAX_LINKS).toBe(10_000);
    let clock = 0;
    const big = Array.from({ length: 50_000 }, (_, i) => `<p><a href="/p/${i}">page ${i}</a></p>`).join('');
    const timed = extractPageLinks(big, PAGE, { budgetMs: 5, now: () => clock++, maxLinks: 100_000 });
    expect(timed.stopped).toBe('link extraction stopped after 5 ms (time budget)');
    expect(timed.moreThan).toBeUndefined();
  });

  it('is not stopped by maxLinks when the page has exactly that many distinct links (duplicates do not count)', () => {
    const html = '<a href="/a">a</a><a href="/b">b</a><a href="/a#again">a again</a>';
    expect(extractPageLinks(html, PAGE, { maxLinks: 2 })).toEqual({
      links: [
        { url: 'http://www.example.com/a', text: 'a' },
        { url: 'http://www.example.com/b', text: 'b' },
      ],
    });
  });

  it('stops when the time budget is spent and returns the links found before', () => {
    let clock = 0;
    const now = () => clock++; // 1 ms per look at the clock
    const html = Array.from({ length: 50_000 }, (_, i) => `<p><a href="/p/${i}">page ${i}</a></p>`).join('');
    const { links, stopped } = extractPageLinks(html, PAGE, { budgetMs: 5, now, maxLinks: 100_000 });
    expect(stopped).toBe('link extraction stopped after 5 ms (time budget)');
    expect(links.length).toBeGreaterThan(0);
    expect(links.length).toBeLessThan(50_000);
    // Document order, none skipped, texts complete: exactly a prefix of the whole page's links.
    expect(links).toEqual(links.map((_, i) => ({ url: `http://www.example.com/p/${i}`, text: `page ${i}` })));
  });

  it('reads a page of nothing but one unterminated <a href= attribute to the end, finding no link', () => {
    const html = `<a href="/start${' <a href=/x>'.repeat(200_000)}`;
    expect(extractPageLinks(html, PAGE, UNBOUNDED_TIME)).toEqual({ links: [] });
    expect(extractPageLinks('<a href='.repeat(200_000), PAGE, UNBOUNDED_TIME)).toEqual({ links: [] });
  });

  it('keeps NUL bytes and lone surrogates as they are, in URLs (percent-encoded) and text, without throwing', () => {
    const html = '<a href="/nul\u0000/\ud800">a\u0000b \udc00</a>\u0000<a href="\ud800">\ud800</a><\u0000a href=/x>';
    expect(extractLinks(html, PAGE)).toEqual([
      { url: 'http://www.example.com/nul%00/%EF%BF%BD', text: 'a\u0000b \udc00' },
      { url: 'http://www.example.com/dir/%EF%BF%BD', text: '\ud800' },
    ]);
  });

  it('takes a 5 MB href as the WHATWG parser resolves it, and goes on to the next link', () => {
    const path = 'a'.repeat(5 * 1024 * 1024);
    const html = `<a href="/${path}?q=1&amp;r=2">huge</a><a href="http://[${path}">bad host</a><a href="/after">after</a>`;
    expect(extractLinks(html, PAGE)).toEqual([
      { url: `http://www.example.com/${path}?q=1&r=2`, text: 'huge' },
      { url: 'http://www.example.com/after', text: 'after' },
    ]);
  });
});

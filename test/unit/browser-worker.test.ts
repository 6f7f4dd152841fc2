import { describe, expect, it } from 'vitest';
import { chromiumArgs } from '../../lib/crawl/browser/pool.ts';
import { browserPages, MAX_AUTO_PAGES } from '../../lib/crawl/browser/worker.ts';

const GiB = 1024 ** 3;

describe('browserPages', () => {
  it('takes BROWSER_PAGES when set', () => {
    expect(browserPages({ BROWSER_PAGES: 3, BROWSER_PAGE_MEMORY_MB: 256 }, 64 * GiB)).toBe(3);
  });

  it('sizes from memory otherwise: one page per four renderer heaps, at least 1, at most MAX_AUTO_PAGES', () => {
    expect(browserPages({ BROWSER_PAGES: 0, BROWSER_PAGE_MEMORY_MB: 256 }, 4 * GiB)).toBe(4);
    expect(browserPages({ BROWSER_PAGES: 0, BROWSER_PAGE_MEMORY_MB: 256 }, 0.5 * GiB)).toBe(1);
    expect(browserPages({ BROWSER_PAGES: 0, BROWSER_PAGE_MEMORY_MB: 256 }, 64 * GiB)).toBe(MAX_AUTO_PAGES);
  });
});

describe('chromiumArgs', () => {
  it('sends anything past request interception to a closed proxy, loopback included, and caps the renderer heap', () => {
    const args = chromiumArgs(128);
    expect(args).toContain('--proxy-server=http://127.0.0.1:9');
    expect(args).toContain('--proxy-bypass-list=<-loopback>');
    expect(args.find((a) => a.startsWith('--host-resolver-rules='))).toMatch(/MAP \* ~NOTFOUND/);
    expect(args).toContain('--js-flags=--max-old-space-size=128');
  });
});

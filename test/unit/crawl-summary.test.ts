import { describe, expect, it } from 'vitest';
import {
  countSkippedLinks,
  countStatusClass,
  type StatusClassCounts,
  skippedLinksLine,
  statusClassLine,
  statusClassOf,
} from '../../cli/crawl-summary.ts';
import { CrawlTally } from '../../cli/crawl-tally.ts';

describe('pages by status class (the `by status` line of the crawl summary)', () => {
  it('classes a page by the hundreds of its status code, and a failed page without one as failed', () => {
    expect(statusClassOf({ url: 'u', success: true, status_code: 200 })).toBe('2xx');
    expect(statusClassOf({ url: 'u', success: true, status_code: 301 })).toBe('3xx');
    expect(statusClassOf({ url: 'u', success: true, status_code: 404 })).toBe('4xx');
    expect(statusClassOf({ url: 'u', success: false, status_code: 503 })).toBe('5xx');
    expect(statusClassOf({ url: 'u', success: false, exception: 'timeout' })).toBe('failed');
    expect(statusClassOf({ url: 'u', success: false, status_code: 0 })).toBe('failed');
    expect(statusClassOf({ url: 'u' })).toBeUndefined();
  });

  it('lists the classes that have pages in a fixed order, and nothing when no page was counted', () => {
    const counts: StatusClassCounts = {};
    for (const code of [404, 200, 200, 500]) countStatusClass(counts, { url: 'u', status_code: code });
    countStatusClass(counts, { url: 'u', success: false });

    expect(statusClassLine(counts)).toBe('by status: 2 2xx, 1 4xx, 1 5xx, 1 failed');
    expect(statusClassLine({})).toBeUndefined();
    expect(statusClassLine(undefined)).toBeUndefined();
  });

  it('counts a redelivered page once in the tally and carries the classes in the summary document', () => {
    const tally = new CrawlTally(() => 0);
    tally.page({ url: 'http://a/', success: true, status_code: 200 });
    tally.page({ url: 'http://b/', success: true, status_code: 404 });
    tally.page({ url: 'http://b/', success: true, status_code: 404 });

    const summary = tally.summary({ appid: 'a', crawlid: 'c', url: 'http://a/' }, 'p', { kind: 'timeout' });

    expect(summary.status_classes).toEqual({ '2xx': 1, '4xx': 1 });
  });
});

describe('links not followed (the crawl summary line)', () => {
  it("sums the pages' links_skipped by rule, most first, and ignores what is not a count", () => {
    const counts = {};
    countSkippedLinks(counts, { links_skipped: { deny_extensions: 2, allowed_domains: 5 } });
    countSkippedLinks(counts, { links_skipped: { deny_extensions: 1, deny_regex: -3, allow_regex: 'x' } });
    countSkippedLinks(counts, { links_skipped: [4] });
    countSkippedLinks(counts, {});

    expect(counts).toEqual({ deny_extensions: 3, allowed_domains: 5 });
    expect(skippedLinksLine(counts)).toBe('links not followed: 5 by allowed_domains, 3 by deny_extensions');
    expect(skippedLinksLine({})).toBeUndefined();
  });

  it('counts a redelivered page once and carries the sums in the summary document', () => {
    const tally = new CrawlTally(() => 0);
    tally.page({ url: 'http://a/', success: true, status_code: 200, links_skipped: { deny_extensions: 1 } });
    tally.page({ url: 'http://a/', success: true, status_code: 200, links_skipped: { deny_extensions: 1 } });

    const summary = tally.summary({ appid: 'a', crawlid: 'c', url: 'http://a/' }, 'p', { kind: 'timeout' });

    expect(summary.links_skipped).toEqual({ deny_extensions: 1 });
  });
});

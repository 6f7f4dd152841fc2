import { describe, expect, it } from 'vitest';
import { CrawlTally, refusalReason } from '../../cli/crawl-tally.ts';

describe('CrawlTally (what `crawl` knows of the crawl it follows)', () => {
  it('counts a redelivered page once, by URL', () => {
    const tally = new CrawlTally(() => 0);
    expect(tally.page({ url: 'http://a/', success: true })).toBe(true);
    expect(tally.page({ url: 'http://a/', success: true })).toBe(false);
    expect(tally.page({ url: 'http://b/', success: false })).toBe(true);
    expect([tally.succeeded.size, tally.failed.size]).toEqual([1, 1]);
  });

  it('is done only once the complete notice has come and every page it counts has been read', () => {
    const tally = new CrawlTally(() => 0);
    tally.page({ url: 'http://a/', success: true });
    expect(tally.done()).toBe(false);
    tally.complete({ action: 'complete', total_pages: 2, total_failed: 1 });
    expect(tally.done()).toBe(false);
    tally.page({ url: 'http://b/', success: true });
    expect(tally.done()).toBe(false);
    tally.page({ url: 'http://c/', success: false });
    expect(tally.done()).toBe(true);
  });

  it('summarizes with the rate over the elapsed time and the last pending count', () => {
    let now = 1000;
    const tally = new CrawlTally(() => now);
    tally.info(7);
    tally.page({ url: 'http://a/' });
    tally.page({ url: 'http://b/' });
    now = 3000;
    const ending = { kind: 'timeout' } as const;
    expect(tally.summary({ appid: 'app', crawlid: 'c', url: 'http://a/' }, 'demo', ending, { out: 'p.jsonl' })).toEqual(
      {
        status: 'timeout',
        appid: 'app',
        crawlid: 'c',
        url: 'http://a/',
        prefix: 'demo',
        pages: 2,
        failed: 0,
        pending: 7,
        seconds: 2,
        pages_per_second: 1,
        out: 'p.jsonl',
        status_classes: {},
        links_skipped: {},
      },
    );
    expect(tally.statusLine()).toBe('pages 2, failed 0, pending 7, 1.0 pages/s, 2 s');
  });
  it('sums up a crawl the cluster refused with status refused and the rejection, whose reason reads as kind: detail', () => {
    const tally = new CrawlTally(() => 0);
    const rejection = {
      error: 'duplicate',
      crawlid: 'c1',
      details: [{ path: '/url', message: "the URL is already in this crawl's dupefilter" }],
    };
    const s = tally.summary({ appid: 'a', crawlid: 'c1', url: 'http://a/' }, 'demo', { kind: 'refused', rejection });
    expect(s).toMatchObject({ status: 'refused', pages: 0, rejection });
    expect(refusalReason(rejection)).toBe("duplicate: the URL is already in this crawl's dupefilter");
    expect(refusalReason({ error: 'stopped' })).toBe('stopped');
  });

  it('adds to the status line why pending pages wait, as the last info reply said, and drops it once none do', () => {
    const tally = new CrawlTally(() => 0);
    tally.info(3, {
      throttled: { domains: 1, next_in_s: 5.2 },
      retrying: { requests: 1, attempt: 3, next_in_s: 8 },
    });
    expect(tally.statusLine()).toBe(
      'pages 0, failed 0, pending 3, 0.0 pages/s, 0 s; waiting on the domain throttle (1 domain, next in 5.2 s); 1 page waits for a retry (attempt 3, next in 8 s)',
    );

    tally.info(2, { throttled: { domains: 2, next_in_s: 1 } });
    expect(tally.statusLine()).toContain(
      'pending 2, 0.0 pages/s, 0 s; waiting on the domain throttle (2 domains, next in 1 s)',
    );

    tally.info(2, {});
    expect(tally.statusLine()).toBe('pages 0, failed 0, pending 2, 0.0 pages/s, 0 s');
  });
});

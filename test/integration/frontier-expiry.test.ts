/**
 * Expiry at lease time (issue 34, docs/contract.md "expired"), on real Redis (cluster mode): a request of a crawl
 * whose `expires` has passed is never leased, even before the expiry function's timer has stopped the crawl; the
 * timer's stop then announces it with every such request counted, and the crawl never looks complete before.
 */
import { describe, expect, test } from 'vitest';
import type { CrawlRef, Lease } from '../../lib/frontier-model.ts';
import { childCrawl, frontierTestRedis, queueRequest, seedCrawl, T0, testFrontier } from '../helpers/frontier.ts';

const redis = frontierTestRedis();
const T0S = T0 / 1000;

function items(crawl: CrawlRef, urls: string[]) {
  return urls.map((url, i) => ({ crawl: i === 0 ? crawl : childCrawl(crawl), request: queueRequest(url) }));
}

describe('expiry at lease', () => {
  test('a queued request of an expired crawl is dropped by the lease, not leased; the stop counts it as purged', async () => {
    const frontier = testFrontier(redis);
    const expiring = seedCrawl('app', 'expiring', { expires: T0S + 10 });
    const live = seedCrawl('app', 'live');
    await frontier.enqueue('link', items(expiring, ['http://x.com/1', 'http://y.com/1', 'http://x.com/2']), T0);
    await frontier.enqueue('link', items(live, ['http://z.com/1', 'http://x.com/3']), T0);

    // Before its expiry the crawl is served as any other.
    const [before] = (await frontier.leaseMany('link', 1, { now: T0 + 9_999 })).leases;
    expect(before?.crawl.crawlid).toBe('expiring');

    // From the second of `expires` on, one call leases only the live crawl's requests and drops the other two,
    // though the expiry function has not run (the crawl is still in the expiry index, and still has its record).
    const at = T0 + 10_000;
    expect((await frontier.dueCrawls('link', at)).map((c) => c.crawlid)).toEqual(['expiring']);
    const many = await frontier.leaseMany('link', 10, { now: at });
    expect(many.leases.map((l) => l.crawl.crawlid)).toEqual(['live', 'live']);
    expect(many.skipped).toBe(2);
    const again = await frontier.leaseMany('link', 10, { now: at + 1 });
    expect(again).toMatchObject({ leases: [], skipped: 0 });

    // The lease taken before the expiry may finish; its ack does not make the crawl look complete (the dropped
    // requests are still its to account for), so no `complete` notice races the `expired` one.
    expect(await frontier.ack(before as Lease, 'done', at)).toMatchObject({ acked: true, complete: false });

    // The expiry function's stop: it claims the crawl and counts the two dropped requests as purged (total_expired).
    const stopped = await frontier.stop('link', 'app', 'expiring', at + 500);
    expect(stopped.purged).toBe(2);
    expect(stopped.settings).toMatchObject({ crawlid: 'expiring', expires: T0S + 10 });
    expect(await frontier.dueCrawls('link', at + 500)).toEqual([]);
    // The live crawl is untouched: its two leases complete it.
    const acks = await Promise.all(many.leases.map((l) => frontier.ack(l, 'done', at + 600)));
    expect(acks.some((a) => a.complete)).toBe(true);
  });

  test('a crawl without expires (0) and one expiring later are leased as usual', async () => {
    const frontier = testFrontier(redis);
    await frontier.enqueue('link', items(seedCrawl('app', 'never', { expires: 0 }), ['http://x.com/a']), T0);
    await frontier.enqueue('link', items(seedCrawl('app', 'later', { expires: T0S + 60 }), ['http://y.com/a']), T0);
    const many = await frontier.leaseMany('link', 10, { now: T0 + 59_999 });
    expect(many.leases.map((l) => l.crawl.crawlid).sort()).toEqual(['later', 'never']);
    expect(many.skipped).toBe(0);
  });
});

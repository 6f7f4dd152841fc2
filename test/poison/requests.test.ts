/**
 * Poison tier, requests (issue "Poison-proof", defects 1, 2, 3, 7): hostile requests fed to `<p>.incoming`
 * of the real local cluster. Each gets a visible, bounded rejection within seconds, its partition moves
 * on, and a normal crawl fed after it completes.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Collector, completeNotice, startTestCluster, type TestCluster } from '../helpers/cluster.ts';
import { type CrawlerProcess, startCrawlerProcess } from '../helpers/crawler-process.ts';
import { type HostileSite, startHostileSite } from '../helpers/hostile-site.ts';

const APPID = 'poisonreq';

describe('hostile requests through the local cluster', () => {
  let t: TestCluster;
  let site: HostileSite;
  let worker: CrawlerProcess;
  let outbound: Collector;
  let rejected: Collector;
  let n = 0;

  beforeAll(async () => {
    site = await startHostileSite();
    t = await startTestCluster({ ALLOW_PRIVATE_NETWORKS: true, QUEUE_HITS: 1000, QUEUE_WINDOW: 1, LOG_LEVEL: 'ERROR' });
    outbound = await t.collect(t.topics.outboundFirehose);
    rejected = await t.collect(t.topics.rejected);
    worker = startCrawlerProcess(t.vars, { CRAWLER_HOST_MAP: site.hostMap, CRAWLER_CONCURRENCY: 4 });
  });
  afterAll(async () => {
    await worker?.stop();
    await t?.stop();
    await site?.close();
  });

  /** Feeds the hostile message and then a normal crawl; the crawl must complete, and the rejection must be there. */
  async function rejectedThenCrawled(hostile: string | Buffer, marker: string): Promise<Record<string, unknown>> {
    n += 1;
    const crawlid = `after-${n}`;
    await t.feed([hostile, { url: site.url('/ok'), appid: APPID, crawlid }]);
    await completeNotice(outbound, crawlid, 60_000);
    return rejected.waitFor((m) => String(m.raw).includes(marker), `the rejection of ${marker}`, 30_000);
  }

  test('a request with a 600 KB appid is rejected without echoing the appid, and the crawl behind it completes', async () => {
    const hostile = JSON.stringify({
      appid: `huge-${'a'.repeat(600_000)}`,
      uuid: 'u-huge',
      crawlid: 'c',
      url: site.url('/ok'),
    });
    const r = await rejectedThenCrawled(hostile, 'huge-aaaa');
    expect(r.error).toBe('schema');
    expect(r.appid).toBeUndefined();
    expect(JSON.stringify(r).length).toBeLessThan(16_384);
  });

  test('attrs nested 10,000 levels deep are rejected as a schema error, not retried as a Redis failure', async () => {
    const hostile = `{"appid":"${APPID}","crawlid":"deep-attrs","url":"${site.url('/ok')}","attrs":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`;
    const r = await rejectedThenCrawled(hostile, 'deep-attrs');
    expect(r.details).toEqual([{ path: '/attrs', message: 'must not nest deeper than 32 levels' }]);
  });

  test('a lone surrogate in crawlid is rejected before it reaches Redis', async () => {
    const hostile = `{"appid":"${APPID}","crawlid":"lone\\ud800","url":"${site.url('/ok')}"}`;
    const r = await rejectedThenCrawled(hostile, 'lone\\ud800');
    expect(r.details).toEqual([{ path: '/crawlid', message: 'must be well-formed Unicode (it has a lone surrogate)' }]);
  });

  test('a 979 KB request with 90,000 unknown fields gets a rejection of 20 details and a count, under 16 KB', async () => {
    const fields = Object.fromEntries(Array.from({ length: 90_000 }, (_, i) => [`u${i}`, 1]));
    const hostile = JSON.stringify({ appid: APPID, crawlid: 'many-fields', url: site.url('/ok'), ...fields });
    expect(hostile.length).toBeGreaterThan(900_000);
    const r = await rejectedThenCrawled(hostile, 'many-fields');
    expect(r.details).toHaveLength(21);
    expect(JSON.stringify(r).length).toBeLessThan(16_384);
  });

  test('a request with appid and uuid that fails validation is answered on outbound too, where its client waits', async () => {
    const hostile = JSON.stringify({
      appid: APPID,
      uuid: 'u-bad-prio',
      crawlid: 'bad-prio',
      url: site.url('/ok'),
      priority: 'high',
    });
    await rejectedThenCrawled(hostile, 'bad-prio');
    const reply = await outbound.waitFor((m) => m.uuid === 'u-bad-prio', 'the outbound rejection');
    expect(reply).toMatchObject({ error: 'schema', appid: APPID });
  });
});

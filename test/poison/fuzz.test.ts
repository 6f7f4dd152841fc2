/**
 * Poison tier, fuzz (docs/design.md §10): 10,000 generated requests (valid ones of every type mixed with every
 * way to get one wrong) fed to `<p>.incoming` of the real local cluster. Every message gets exactly one
 * visible outcome: a rejection on `<p>.rejected` naming its offset, a page (a valid crawl), or a reply on
 * outbound (a valid action, stats or domain request). Nothing stalls: a normal crawl fed last completes.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { BUILT_IN_SPIDERS } from '../../lib/crawl/spiders/index.ts';
import { seedEntry } from '../../lib/monitor/kafka-monitor.ts';
import { parseRequest } from '../../lib/schemas/index.ts';
import { type Collector, completeNotice, startTestCluster, type TestCluster } from '../helpers/cluster.ts';
import { type CrawlerProcess, startCrawlerProcess } from '../helpers/crawler-process.ts';
import { fuzzMessages } from '../helpers/fuzz.ts';
import { type HostileSite, startHostileSite } from '../helpers/hostile-site.ts';
import { waitUntil } from '../helpers/services.ts';

const COUNT = 10_000;
const APPID = 'fuzzapp';

/** What the cluster must answer a message with, decided by the same validation the kafka-monitor runs. */
type Expected =
  | { kind: 'rejected' }
  | { kind: 'page'; crawlid: string }
  | { kind: 'expired'; crawlid: string }
  | { kind: 'reply'; uuid: string };

function expectedOutcome(value: Buffer): Expected {
  try {
    // The spider types the kafka-monitor accepts here: the built-ins (no plugin registers others in this test).
    const c = parseRequest(value, { spiders: BUILT_IN_SPIDERS });
    if (c.type === 'crawl') {
      seedEntry(c.request);
      // A crawl whose `expires` has passed is answered with its `expired` notice, not crawled.
      if (c.request.expires > 0 && c.request.expires * 1000 <= Date.now())
        return { kind: 'expired', crawlid: c.request.crawlid };
      return { kind: 'page', crawlid: c.request.crawlid };
    }
    return { kind: 'reply', uuid: c.request.uuid };
  } catch {
    return { kind: 'rejected' };
  }
}

describe(`a fuzz of ${COUNT} requests through the local cluster`, () => {
  let t: TestCluster;
  let site: HostileSite;
  let worker: CrawlerProcess;
  let pages: Collector;
  let outbound: Collector;
  let rejected: Collector;
  const offsets: number[] = [];
  const expected: Expected[] = [];
  const shapes: string[] = [];
  const values: Buffer[] = [];

  beforeAll(async () => {
    site = await startHostileSite();
    t = await startTestCluster(
      { ALLOW_PRIVATE_NETWORKS: true, QUEUE_HITS: 100_000, QUEUE_WINDOW: 1, LOG_LEVEL: 'ERROR' },
      { batchSize: 500 },
    );
    pages = await t.collect(t.topics.crawledFirehose);
    outbound = await t.collect(t.topics.outboundFirehose);
    rejected = await t.collect(t.topics.rejected);
    worker = startCrawlerProcess(t.vars, { CRAWLER_HOST_MAP: site.hostMap, CRAWLER_CONCURRENCY: 16 });

    const messages = fuzzMessages(COUNT, 20261123, site.url('/ok'), APPID);
    for (const m of messages) {
      expected.push(expectedOutcome(m.value));
      shapes.push(m.shape);
      values.push(m.value);
    }
    // All to partition 0, so each message's offset is known and names its rejection.
    for (let i = 0; i < messages.length; i += 500) {
      const chunk = messages.slice(i, i + 500);
      const [meta] = await t.producer.send({
        topic: t.topics.incoming,
        acks: -1,
        messages: chunk.map((m) => ({ value: m.value, partition: 0 })),
      });
      const base = Number(meta?.baseOffset);
      for (let k = 0; k < chunk.length; k++) offsets.push(base + k);
    }
  }, 180_000);
  afterAll(async () => {
    await worker?.stop();
    await t?.stop();
    await site?.close();
  });

  test('the fuzz holds valid requests of every type and many kinds of invalid ones', () => {
    const kinds = expected.map((e) => e.kind);
    expect(kinds.filter((k) => k === 'page').length).toBeGreaterThan(500);
    expect(kinds.filter((k) => k === 'reply').length).toBeGreaterThan(500);
    expect(kinds.filter((k) => k === 'rejected').length).toBeGreaterThan(5000);
  });

  test('every invalid message gets exactly one rejection naming its offset', async () => {
    const want = offsets.filter((_, i) => expected[i]?.kind === 'rejected');
    const wanted = new Set(want);
    await waitUntil(
      `${want.length} rejections`,
      () => rejected.messages.filter((r) => r.error !== 'duplicate').length >= want.length || undefined,
      150_000,
    );
    const offsetOf = (r: Record<string, unknown>) => (r.source as { offset: number }).offset;
    // A valid crawl request fed again after its crawl finished (the fuzz reuses short crawl ids) is refused as a
    // `duplicate` with its reason (issue 30 defect 8: every accepted request gets one visible outcome): a valid
    // page request may get that rejection, and only that one.
    const pageOffsets = new Set(offsets.filter((_, i) => expected[i]?.kind === 'page'));
    const refed = rejected.messages.filter((r) => r.error === 'duplicate' && pageOffsets.has(offsetOf(r)));
    const got = rejected.messages.filter((r) => !refed.includes(r)).map(offsetOf);
    expect(got.filter((o) => wanted.has(o))).toHaveLength(want.length);
    expect(new Set(got).size).toBe(got.length);
    expect(got.every((o) => wanted.has(o))).toBe(true);
    expect(new Set(refed.map(offsetOf)).size).toBe(refed.length);
  });

  test('every valid crawl yields its page (or, when its expires has passed, its expired notice) and every valid action, stats or domain request its reply', async () => {
    const crawlids = new Set(expected.flatMap((e) => (e.kind === 'page' ? [e.crawlid] : [])));
    const uuids = new Set(expected.flatMap((e) => (e.kind === 'reply' ? [e.uuid] : [])));
    const expiredIds = new Set(expected.flatMap((e) => (e.kind === 'expired' ? [e.crawlid] : [])));
    const seen = (c: Collector, field: string, want: Set<string>, match = (_: Record<string, unknown>) => true) =>
      new Set(
        c.messages
          .filter(match)
          .map((m) => m[field])
          .filter((v): v is string => typeof v === 'string' && want.has(v)),
      );
    const notices = () => seen(outbound, 'crawlid', expiredIds, (m) => m.action === 'expired');
    const done = () =>
      seen(pages, 'crawlid', crawlids).size === crawlids.size &&
      seen(outbound, 'uuid', uuids).size === uuids.size &&
      notices().size === expiredIds.size;
    await waitUntil(`${crawlids.size} pages and ${uuids.size} replies`, done, 120_000).catch(() => undefined);
    const gotPages = seen(pages, 'crawlid', crawlids);
    const gotReplies = seen(outbound, 'uuid', uuids);
    const gotNotices = notices();
    expect(expiredIds.size).toBeGreaterThan(0);
    const missing = expected.flatMap((e, i) =>
      (e.kind === 'page' && !gotPages.has(e.crawlid)) ||
      (e.kind === 'reply' && !gotReplies.has(e.uuid)) ||
      (e.kind === 'expired' && !gotNotices.has(e.crawlid))
        ? [`${shapes[i]}: ${String(values[i]).slice(0, 200)}`]
        : [],
    );
    expect(missing.slice(0, 5), `${missing.length} without an outcome`).toEqual([]);
  });

  test('after the fuzz, a normal crawl completes', async () => {
    await t.feed([{ url: site.url('/ok'), appid: APPID, crawlid: 'after-fuzz' }]);
    await completeNotice(outbound, 'after-fuzz', 60_000);
  });
});

/**
 * Per-app topics created on first use (issue 34; docs/contract.md "Topics"), end to end: KAFKA_APPID_TOPICS on, a
 * new appid's crawl fed to Kafka, the real monitors, a crawler worker PROCESS (functions/crawler/main.ts) fetching a
 * fixture site, real Kafka with auto-create off. The new app's pages arrive on `<p>.crawled_<appid>` and its
 * `complete` notice on `<p>.outbound_<appid>`, created with KAFKA_TOPIC_PARTITIONS partitions; an app over
 * KAFKA_APPID_TOPICS_MAX gets no topics (its pages still reach the firehose).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { crawledAppTopic, outboundAppTopic } from '../../lib/kafka/topics.ts';
import { type FixtureSite, startSite } from '../../localstack/site/site.ts';
import { type Collector, completeNotice, crawlPages, type E2eCluster, startE2eCluster } from '../helpers/cluster.ts';
import { waitUntil } from '../helpers/services.ts';

describe('per-app topics created on first use', () => {
  let site: FixtureSite;
  let t: E2eCluster;
  let pages: Collector;
  let outbound: Collector;
  const appTopics: string[] = [];

  beforeAll(async () => {
    site = await startSite({ pages: 30, links: 3 });
    t = await startE2eCluster({ KAFKA_APPID_TOPICS: true, KAFKA_APPID_TOPICS_MAX: 1 }, { site });
    ({ pages, outbound } = t);
  });
  afterAll(async () => {
    await t?.stop();
    await site?.close();
    if (t && appTopics.length > 0) {
      const admin = t.kafka.admin();
      await admin.connect();
      await admin.deleteTopics({ topics: appTopics }).catch(() => undefined);
      await admin.disconnect();
    }
  });

  /** The topics on the brokers now. */
  async function brokerTopics(): Promise<Map<string, number>> {
    const admin = t.kafka.admin();
    await admin.connect();
    try {
      const { topics } = await admin.fetchTopicMetadata();
      return new Map(topics.map((m) => [m.name, m.partitions.length]));
    } finally {
      await admin.disconnect();
    }
  }

  test('a new appid gets its own crawled_ and outbound_ topics, with the configured partitions, and its pages on them', async () => {
    const prefix = t.vars.KAFKA_TOPIC_PREFIX;
    const [crawled, replies] = [crawledAppTopic(prefix, 'newapp'), outboundAppTopic(prefix, 'newapp')];
    appTopics.push(crawled, replies);
    expect((await brokerTopics()).has(crawled)).toBe(false);

    await t.feed([{ url: site.url(0), appid: 'newapp', crawlid: 'first', maxdepth: 1 }]);
    const expected = site.reachable(0, 1).size;
    await completeNotice(outbound, 'first', 60_000);
    await waitUntil('the firehose pages', () => crawlPages(pages, 'first').length >= expected, 15_000);

    const topics = await brokerTopics();
    expect(topics.get(crawled)).toBe(t.vars.KAFKA_TOPIC_PARTITIONS);
    expect(topics.get(replies)).toBe(t.vars.KAFKA_TOPIC_PARTITIONS);
    // Read from the beginning: every page the firehose got, the first one included, is on the app's topic too.
    const own = await t.collect(crawled);
    await waitUntil('the pages on the app topic', () => crawlPages(own, 'first').length >= expected, 30_000);
    expect(
      crawlPages(own, 'first')
        .map((m) => m.url as string)
        .sort(),
    ).toEqual(
      crawlPages(pages, 'first')
        .map((m) => m.url as string)
        .sort(),
    );
    const ownReplies = await t.collect(replies);
    expect(await completeNotice(ownReplies, 'first', 30_000)).toMatchObject({ appid: 'newapp', total_pages: expected });
  });

  test('an app over KAFKA_APPID_TOPICS_MAX gets no topics; its pages still reach the firehose', async () => {
    // KAFKA_APPID_TOPICS_MAX is 1, and the test above gave its one app topics.
    const prefix = t.vars.KAFKA_TOPIC_PREFIX;
    const crawled = crawledAppTopic(prefix, 'overapp');
    appTopics.push(crawled, outboundAppTopic(prefix, 'overapp'));
    await t.feed([{ url: site.url(1), appid: 'overapp', crawlid: 'over', maxdepth: 0 }]);
    await completeNotice(outbound, 'over', 60_000);
    await waitUntil('the firehose page', () => crawlPages(pages, 'over').length >= 1, 15_000);
    const topics = await brokerTopics();
    expect(topics.has(crawled)).toBe(false);
    expect(topics.has(outboundAppTopic(prefix, 'overapp'))).toBe(false);
  });
});

/**
 * One system: URL Frontier crawls seen and steered through the Kafka API. The local cluster's monitors on real
 * Kafka, the URL Frontier store over the same cluster-mode Redis and key prefix; requests go in on
 * `<p>.incoming`, replies come back on `<p>.outbound_firehose`. Once with the URL frontier in one partition, once in six
 * (`FRONTIER_PARTITIONS`, which the monitors and the REST API read as the store does).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRestDeps } from '../../functions/rest/deps.ts';
import { silentLog } from '../../lib/ports.ts';
import type { PutItem, ServedUrl } from '../../lib/redis/url-frontier/model.ts';
import { UrlFrontierStore } from '../../lib/redis/url-frontier/store.ts';
import { createRestRouter } from '../../lib/rest/router.ts';
import { type Collector, startTestCluster, type TestCluster } from '../helpers/cluster.ts';
import { clusterRedis } from '../helpers/services.ts';
import { unlinkKeys } from '../helpers/url-frontier.ts';

const redis = clusterRedis();
let tc: TestCluster;
let store: UrlFrontierStore;
let outbound: Collector;

afterAll(() => redis.disconnect());

const put = (crawl: string, key: string, urls: string[]) =>
  store.put(urls.map((url): PutItem => ({ crawl, key, url, kind: 'discovered', date: 0, metadata: {} })));

async function ask(request: Record<string, unknown>): Promise<Record<string, unknown>> {
  await tc.feed([request]);
  return outbound.waitFor((m) => m.uuid === request.uuid, `the reply to ${String(request.uuid)}`);
}

async function served(): Promise<string[]> {
  const out: ServedUrl[] = [];
  await store.getUrls({ maxQueues: 0, maxUrlsPerQueue: 0, holdSeconds: 600 }, (urls) => {
    out.push(...urls);
  });
  return out.map((u) => u.url).sort();
}

describe.each([1, 6])('URL Frontier crawls through the Kafka API (FRONTIER_PARTITIONS=%i)', (partitions) => {
  beforeAll(async () => {
    tc = await startTestCluster({ FRONTIER_PARTITIONS: partitions });
    store = new UrlFrontierStore(redis, tc.vars.REDIS_KEY_PREFIX, { partitions });
    outbound = await tc.collect(tc.topics.outboundFirehose);
  }, 60_000);

  afterAll(async () => {
    await tc?.stop();
    await unlinkKeys(redis, (await store?.knownKeys()) ?? []);
  });

  it('info, stats, blacklist, throttle and stop reach the URL Frontier crawls', async () => {
    await put('news', 'www.shop.com', ['http://www.shop.com/1', 'http://www.shop.com/2']);
    await put('news', 'blog.example.org', ['http://blog.example.org/a', 'http://blog.example.org/b']);

    const info = await ask({ action: 'info', appid: 'ops', uuid: 'uf-info', spiderid: 'url-frontier' });
    expect(info).toMatchObject({
      spiderid: 'url-frontier',
      total_pending: 4,
      total_domains: 2,
      total_crawlids: 1,
      crawlids: {
        news: { total: 4, distinct_domains: 2, domains: { 'www.shop.com': { total: 2 } } },
      },
    });
    const stats = await ask({ stats: 'queue', appid: 'ops', uuid: 'uf-stats' });
    expect(stats.queues).toMatchObject({ total_backlog: 4, 'queue_url-frontier': { spider_backlog: 4 } });

    // The dashboard's queue table lists them as spider type url-frontier.
    const rest = createRestDeps('uf-e2e', silentLog, tc.vars);
    try {
      const answer = await createRestRouter(rest.ctx)({ method: 'GET', path: '/ui/api/queues', headers: {} });
      expect(answer.status).toBe(200);
      expect(JSON.parse(String(answer.body)).data).toEqual({
        total_backlog: 4,
        num_domains: 2,
        top: [
          { spiderid: 'url-frontier', domain: 'blog.example.org', backlog: 2 },
          { spiderid: 'url-frontier', domain: 'www.shop.com', backlog: 2 },
        ],
      });
    } finally {
      await rest.close();
    }

    const black = await ask({ action: 'blacklist-update', appid: 'ops', uuid: 'uf-black', domain: 'shop.com' });
    expect(black).not.toHaveProperty('error');
    const throttle = await ask({
      action: 'domain-update',
      appid: 'ops',
      uuid: 'uf-throttle',
      domain: 'example.org',
      hits: 1,
      window: 60,
      scale: 1.0,
    });
    expect(throttle).not.toHaveProperty('error');
    // shop.com blacklisted: nothing from it; example.org at 1 per minute: one of its two.
    expect(await served()).toEqual(['http://blog.example.org/a']);

    const stop = await ask({
      action: 'stop',
      appid: 'ops',
      uuid: 'uf-stop',
      spiderid: 'url-frontier',
      crawlid: 'news',
    });
    expect(stop).toMatchObject({ action: 'stop', crawlid: 'news', total_purged: 4 });
    expect(await store.crawls()).toEqual([]);
  }, 90_000);
});

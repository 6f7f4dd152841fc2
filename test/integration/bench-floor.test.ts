/**
 * The crawl bench's publish floor (bench/lib/floor.ts, bench/lib/raw.ts `publish`) against a real broker and a real
 * HTTP site: every page the raw loop fetches is produced once, as a contract page message, and counted only once
 * Kafka stored it; a publish that fails is an error of the pass, never a page.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFloorPublisher } from '../../bench/lib/floor.ts';
import { parseHostMap, rawCrawl } from '../../bench/lib/raw.ts';
import { config } from '../../lib/config/index.ts';
import { type FixtureSite, startSite } from '../../localstack/site/site.ts';
import { testKafka, uniqueName, waitUntil } from '../helpers/services.ts';

let site: FixtureSite;
beforeAll(async () => {
  site = await startSite({ pages: 40, links: 4 });
});
afterAll(async () => {
  await site.close();
});

const vars = () => ({ ...config(), KAFKA_BROKERS: `127.0.0.1:${config().CRAWL_KAFKA_PORT}` });

async function consumeAll(topic: string, n: number): Promise<Record<string, unknown>[]> {
  const consumer = testKafka().consumer({ groupId: uniqueName('g') });
  const values: Record<string, unknown>[] = [];
  try {
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        values.push(JSON.parse(message.value?.toString('utf8') ?? 'null'));
      },
    });
    await waitUntil(`${n} messages on ${topic}`, () => values.length >= n, 30_000);
  } finally {
    await consumer.disconnect();
  }
  return values;
}

describe('bench publish floor', () => {
  it('produces each fetched page once as a page message, and counts a page once Kafka stored it', async () => {
    const publisher = await startFloorPublisher(vars());
    try {
      const crawl = { seeds: [site.url(1)], maxdepth: 2, resolve: parseHostMap(site.hostMap), progress: () => {} };
      // The same crawl without publishing: the pages the loop reaches.
      const bare = await rawCrawl({ ...crawl, concurrency: 4, client: 'fetcher' });
      expect(bare.pages).toBeGreaterThan(10);
      const r = await rawCrawl({
        ...crawl,
        concurrency: 4,
        client: 'fetcher',
        publish: publisher.publish,
        maxPublishing: 3,
      });
      expect(r.errors).toBe(0);
      expect(r.pages).toBe(bare.pages);
      expect(r.published).toBe(r.pages);
      expect(publisher.published()).toBe(r.pages);
      expect(await publisher.stored()).toBe(r.pages);
      const pages = await consumeAll(publisher.topic, r.pages);
      const urls = new Set(pages.map((p) => p.url));
      expect(urls.size).toBe(r.pages);
      const sitePages = new Set([...site.reachable(1, 2)].map((n) => site.url(n)));
      for (const url of sitePages) expect(urls.has(url)).toBe(true);
      for (const p of pages) {
        expect(p).toMatchObject({ appid: 'bench', crawlid: 'floor', spiderid: 'link', success: true });
        // The site also links to a page it does not have: its 404 is published like any page.
        if (!sitePages.has(p.url as string)) continue;
        expect(p.status_code).toBe(200);
        expect(typeof p.body === 'string' && p.body.includes('<html')).toBe(true);
        // Links are extracted (and published) on the pages below maxdepth only, as the crawler's link spider does.
        const links = p.links as { url: string }[];
        if ((p.depth as number) < 2) expect(links.length).toBeGreaterThan(0);
        else expect(links).toEqual([]);
      }
    } finally {
      await publisher.close();
    }
  });

  it('counts a page whose publish fails as an error, not a page', async () => {
    const crawl = { seeds: [site.url(1)], maxdepth: 1, resolve: parseHostMap(site.hostMap), progress: () => {} };
    const bare = await rawCrawl({ ...crawl, concurrency: 2, client: 'fetcher' });
    const r = await rawCrawl({
      seeds: [site.url(1)],
      maxdepth: 1,
      concurrency: 2,
      resolve: parseHostMap(site.hostMap),
      client: 'fetcher',
      publish: async () => {
        throw new Error('broker down');
      },
      progress: () => {},
    });
    expect(r.pages).toBe(0);
    expect(r.published).toBe(0);
    // Every page fetched and none counted; the links of the seed were still followed.
    expect(r.errors).toBe(bare.pages);
    // The first three errors name their URL and cause; the rest are only counted.
    expect(r.errorSamples).toHaveLength(3);
    for (const e of r.errorSamples) expect(e).toMatch(/^http:\/\/.+: broker down$/);
    expect(bare.errorSamples).toEqual([]);
  });

  it('refuses to publish from the bare undici client, which has no fetch result to build a page from', async () => {
    await expect(
      rawCrawl({
        seeds: [site.url(1)],
        maxdepth: 0,
        concurrency: 1,
        resolve: parseHostMap(site.hostMap),
        client: 'undici',
        publish: async () => {},
        progress: () => {},
      }),
    ).rejects.toThrow('raw loop: publish needs the fetcher client');
  });
});

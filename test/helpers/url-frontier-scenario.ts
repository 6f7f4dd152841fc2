/**
 * A URL frontier in the state the `frontier reshard` tests move (test/integration/url-frontier-reshard.test.ts), built
 * twice under two prefixes with one clock: the store that is moved and a reference that stays where it is, so that
 * after a move both must answer every call alike. And what the tests compare: the answers of every read the URL
 * Frontier API makes, and the URLs GetURLs serves.
 */
import { expect } from 'vitest';
import type { RedisClient } from '../../lib/redis/client.ts';
import type { GetUrlsRequest, Metadata, PutItem } from '../../lib/redis/url-frontier/model.ts';
import { DUMP_MAX_URLS } from '../../lib/redis/url-frontier/reshard-queues.ts';
import { UrlFrontierStore } from '../../lib/redis/url-frontier/store.ts';
import { uniqueName } from './services.ts';

/** The scenario's clock at its start (epoch ms, a whole second), and in seconds. */
export const UF_T0 = Date.UTC(2026, 5, 1, 12, 0, 0);
const T0S = UF_T0 / 1000;

/** The crawls (one with characters a key name must encode) and the queue that is too large to copy whole. */
export const UF_CRAWLS = ['c1', 'c2', 'DEFAULT', 'c:x/é {y}'] as const;
export const BIG_QUEUE = { crawl: 'c1', key: 'big.example.org' } as const;
/** URLs of the large queue: past the bound of a whole copy, so it is copied in pages. */
const BIG_URLS = DUMP_MAX_URLS * 2 + 500;

/** Queue keys of crawl `c` (index `i` in {@link UF_CRAWLS}): plenty of plain ones, odd ones, hosts of one domain. */
function queueKeys(i: number): string[] {
  const plain = Array.from({ length: 110 + 10 * i }, (_, j) => `h${j}.site${j % 7}.com`);
  return [...plain, '\u{1F600}.test', '\uFF5A.test', '\u00E9.test', 'www.shop.com', 'a.shop.com', 'Z.test'];
}

const meta = (j: number): Metadata => (j % 5 === 0 ? { depth: [String(j % 3)], tags: ['a', `t${j}`] } : {});

/** Every PutURLs item of the scenario, in order: discovered URLs, some with metadata, then completions and reschedules. */
function items(): PutItem[] {
  const out: PutItem[] = [];
  UF_CRAWLS.forEach((crawl, i) => {
    queueKeys(i).forEach((key, j) => {
      for (let u = 0; u < 1 + ((i + j) % 4); u++)
        out.push({
          crawl,
          key,
          url: `https://${key}/p${u}?j=${j}`,
          kind: 'discovered',
          date: 0,
          metadata: meta(j + u),
        });
      if (j % 6 === 0) out.push({ crawl, key, url: `http://${key}/done`, kind: 'known', date: 0, metadata: {} });
      if (j % 9 === 0)
        out.push({ crawl, key, url: `http://${key}/later`, kind: 'known', date: T0S + 3600, metadata: meta(j) });
    });
  });
  for (let u = 0; u < BIG_URLS; u++)
    out.push({
      ...BIG_QUEUE,
      url: `http://${BIG_QUEUE.key}/${u}`,
      kind: u % 25 === 0 ? 'known' : 'discovered',
      date: u % 50 === 0 ? 0 : T0S + (u % 3) * 60,
      metadata: u % 4 === 0 ? { n: [String(u)] } : {},
    });
  return out;
}

/** The store and its twin, and the clock they share. */
export interface UfScenario {
  /** The store that is moved, at one partition. */
  store: UrlFrontierStore;
  /** Its twin, never moved. */
  reference: UrlFrontierStore;
  clock: { now: number };
}

/** A store under `prefix` at `partitions` partitions, on the scenario's clock. */
export function storeAt(redis: RedisClient, prefix: string, partitions: number, clock: { now: number }) {
  return new UrlFrontierStore(redis, prefix, { partitions, now: () => clock.now });
}

/** Writes the scenario into `s`: URLs, holds, a crawl limit, blocks, delays, domain settings. */
async function fill(s: UrlFrontierStore, clock: { now: number }): Promise<void> {
  const all = items();
  for (let at = 0; at < all.length; at += 2000) await s.put(all.slice(at, at + 2000));
  await s.blockQueueUntil('c1', 'h5.site5.com', T0S + 120);
  await s.blockQueueUntil('c2', '\u{1F600}.test', T0S + 7200);
  expect(await s.setCrawlLimit('c2', 'h7.site0.com', 1)).toBe(true);
  await s.setDelay('c1', 'h3.site3.com', 30);
  await s.setDelay('', '', 2);
  await s.configureDomain('domain-update', 'shop.com', { hits: 1, window: 60, scale: 1 });
  await s.configureDomain('blacklist-update', 'site4.com');
  await s.setActive(true);
  // Held URLs: two of each of ten queues of c1, and 300 of the large queue, for ten minutes.
  clock.now = UF_T0 + 1000;
  await s.getUrls({ ...BIG_QUEUE, maxQueues: 0, maxUrlsPerQueue: 300, holdSeconds: 600 }, () => {});
  await s.getUrls({ crawl: 'c1', maxQueues: 10, maxUrlsPerQueue: 2, holdSeconds: 600 }, () => {});
  clock.now = UF_T0 + 2000;
}

/** Builds the scenario: the same URL frontier under two fresh prefixes at one partition. */
export async function buildUfScenario(redis: RedisClient): Promise<UfScenario> {
  const clock = { now: UF_T0 };
  const store = storeAt(redis, uniqueName('ufm'), 1, clock);
  const reference = storeAt(redis, uniqueName('ufr'), 1, clock);
  for (const s of [store, reference]) {
    clock.now = UF_T0;
    await fill(s, clock);
  }
  return { store, reference, clock };
}

/** A URL record as the comparisons show it: crawl, key, URL, metadata and `more`, separated by tabs. */
const line = (r: { crawl: string; key: string; url: string; metadata: Metadata }, ...more: unknown[]) =>
  [r.crawl, r.key, r.url, JSON.stringify(r.metadata), ...more].join('\t');

/**
 * The answers of every read of the URL Frontier API over store `s`: ListCrawls, ListQueues pages (active only and
 * all), GetStats of each crawl and of some queues, CountURLs (all, and filtered), ListURLs (every URL with its dates and
 * metadata, and a page), the backlog per queue and its total, GetActive.
 */
export async function ufAnswers(s: UrlFrontierStore): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {
    crawls: await s.crawls(),
    backlog: await s.backlog(),
    total: await s.backlogTotal(),
    active: await s.active(),
  };
  for (const crawl of [...UF_CRAWLS, 'none']) {
    const pages: string[][] = [];
    for (let start = 0; start < 160; start += 25) pages.push(await s.listQueues(crawl, start, 25, false));
    out[`${crawl} active pages`] = pages;
    out[`${crawl} all`] = await s.listQueues(crawl, 0, 1000, true);
    out[`${crawl} stats`] = await s.stats(crawl);
    out[`${crawl} count`] = await s.countUrls(crawl, undefined);
    out[`${crawl} count p0`] = await s.countUrls(crawl, undefined, (u) => u.includes('/p0'));
    const urls: string[] = [];
    await s.listUrls(crawl, undefined, 0, 100_000, undefined, (r) => {
      urls.push(line(r, r.date, r.created));
    });
    out[`${crawl} urls`] = urls;
    const page: string[] = [];
    await s.listUrls(
      crawl,
      undefined,
      40,
      30,
      (u) => !u.includes('done'),
      (r) => {
        page.push(line(r, r.date));
      },
    );
    out[`${crawl} urls page`] = page;
  }
  for (const [crawl, key] of [
    BIG_QUEUE,
    { crawl: 'c1', key: 'h5.site5.com' },
    { crawl: 'c2', key: 'www.shop.com' },
  ].map((q) => [q.crawl, q.key] as const))
    out[`${crawl} ${key} stats`] = await s.stats(crawl, key);
  return out;
}

/** One GetURLs over every crawl (no bound on queues or URLs): what it served, as sorted lines. */
export async function served(s: UrlFrontierStore, req: Partial<GetUrlsRequest> = {}): Promise<string[]> {
  const out: string[] = [];
  await s.getUrls({ maxQueues: 0, maxUrlsPerQueue: 0, holdSeconds: 300, ...req }, (urls) => {
    for (const u of urls) out.push(line(u));
  });
  return out.sort();
}

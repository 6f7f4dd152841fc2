/**
 * The physical limit of a crawl (issue 8 `raw`): fetch + the crawler's own link extraction
 * (lib/crawl/extract/links.ts `extractLinks`, on the pages whose links are followed: depth < maxdepth) in a tight loop at a fixed concurrency, breadth first from the seeds
 * to `maxdepth` with an in-memory seen-set, no Redis, no Kafka, no politeness.
 *
 * Two clients:
 * - `undici`: a bare undici Agent (`request` + `body.text()`), one keep-alive pool per origin with
 *   `concurrency` connections, host names resolved by the same host map the crawler uses;
 * - `fetcher`: the crawler's own {@link UndiciFetcher} (SSRF guard, redirect handling, charset detection,
 *   decompression), which shows what the fetcher adds over bare undici.
 *
 * With `publish` (the `fetcher` client only), each page is then also handed to it, as a crawler worker publishes its
 * pages (bench/lib/floor.ts): in the background, at most `maxPublishing` at once beyond the fetches (a worker's
 * `maxDelivering`), and a page counts when its publish has settled.
 */
import { Agent } from 'undici';
import { extractLinks } from '../../lib/crawl/extract/links.ts';
import { UndiciFetcher } from '../../lib/crawl/fetch/fetcher.ts';
import { guardedLookup } from '../../lib/crawl/fetch/ssrf.ts';
import type { FetchResult, Link } from '../../lib/crawl/types.ts';
import { type PageClock, pageClock } from './pace.ts';
import { benchWarmupMaxdepth, type SeedPlan, type Warmup } from './site-config.ts';

export type RawClient = 'undici' | 'fetcher';

/** One fetched page as the raw loop hands it on: its fetch result and the links extracted (none at maxdepth). */
interface RawPage {
  url: string;
  depth: number;
  response: FetchResult;
  links: Link[];
}

/** Publishes a page (bench/lib/floor.ts); a rejection counts as an error of the pass. */
export type RawPublish = (page: RawPage) => Promise<void>;

export interface RawOptions {
  seeds: string[];
  maxdepth: number;
  concurrency: number;
  /** `undici` client: connections per origin (requests beyond them queue in the pool). @default concurrency */
  connectionsPerOrigin?: number;
  /** Host name → IP (the fixture site's host map). */
  resolve: Record<string, string>;
  client: RawClient;
  progress: (message: string) => void;
  /** Gives up after this many seconds (the numbers then cover what was crawled). @default 600 */
  budgetS?: number;
  /** Each page is also published (the `fetcher` client only: a page message is built from its result). */
  publish?: RawPublish;
  /** Publishes pending at once before the fetch loop waits for one. @default concurrency */
  maxPublishing?: number;
  /** The `undici` client's timeouts: connect, headers and body each `timeoutMs`, a whole fetch `totalTimeoutMs`. */
  timeoutMs?: number;
  totalTimeoutMs?: number;
  /** When given, the epoch ms of every page as it completes is pushed here. */
  times?: number[];
}

export interface RawResult extends PageClock {
  client: RawClient;
  errors: number;
  /** The first few errors, `<url>: <message>` (a pass with errors says which). */
  errorSamples: string[];
  links: number;
  bytes: number;
  timedOut: boolean;
  /** Pages published (with `publish`). */
  published: number;
}

/** Errors a pass keeps the message of. */
const MAX_ERROR_SAMPLES = 3;

const HEADERS = {
  'user-agent': 'crawl-cluster-bench/1.0',
  accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
  'accept-language': 'en',
};

/** Parses a `host=ip,host2=ip` map (CRAWLER_HOST_MAP syntax). */
export function parseHostMap(spec: string): Record<string, string> {
  if (!spec) return {};
  return Object.fromEntries(spec.split(',').map((pair) => pair.split('=') as [string, string]));
}

export async function rawCrawl(o: RawOptions): Promise<RawResult> {
  if (o.publish && o.client !== 'fetcher') throw new Error('raw loop: publish needs the fetcher client');
  const budgetMs = (o.budgetS ?? 600) * 1000;
  const agent =
    o.client === 'undici'
      ? new Agent({
          connections: o.connectionsPerOrigin ?? o.concurrency,
          allowH2: false,
          connect: { lookup: guardedLookup(true, o.resolve), ...(o.timeoutMs ? { timeout: o.timeoutMs } : {}) },
          ...(o.timeoutMs ? { headersTimeout: o.timeoutMs, bodyTimeout: o.timeoutMs } : {}),
        })
      : undefined;
  const fetcher =
    o.client === 'fetcher'
      ? new UndiciFetcher({ allowPrivateNetworks: true, resolve: o.resolve, connectionsPerOrigin: o.concurrency })
      : undefined;

  const get = async (url: string): Promise<{ text: string; bytes: number; response?: FetchResult }> => {
    if (fetcher) {
      const r = await fetcher.fetch({ url, userAgent: HEADERS['user-agent'] });
      return { text: r.text ?? '', bytes: r.body.length, response: r };
    }
    const u = new URL(url);
    const r = await (agent as Agent).request({
      origin: u.origin,
      path: `${u.pathname}${u.search}`,
      method: 'GET',
      headers: HEADERS,
      ...(o.totalTimeoutMs ? { signal: AbortSignal.timeout(o.totalTimeoutMs) } : {}),
    });
    // Chunks + one UTF-8 decode: faster than `body.text()` (a streaming TextDecoder) for 30 KB pages.
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of r.body) {
      chunks.push(chunk as Buffer);
      size += (chunk as Buffer).length;
    }
    return { text: Buffer.concat(chunks, size).toString('utf8'), bytes: size };
  };

  const queue: [string, number][] = o.seeds.map((u) => [u, 0]);
  let head = 0;
  const seen = new Set(o.seeds);
  let inFlight = 0;
  let errors = 0;
  const errorSamples: string[] = [];
  const failed = (url: string, error: unknown) => {
    errors++;
    if (errorSamples.length < MAX_ERROR_SAMPLES) errorSamples.push(`${url}: ${(error as Error)?.message ?? error}`);
  };
  let links = 0;
  let bytes = 0;
  let timedOut = false;
  let published = 0;
  // Pages being published in the background: the fetch loop goes on unless `maxPublishing` of them are pending.
  const deliveries = new Set<Promise<void>>();
  let waiters: (() => void)[] = [];
  const wake = () => {
    const w = waiters;
    waiters = [];
    for (const f of w) f();
  };
  const clock = pageClock();
  const started = Date.now();
  const report = setInterval(() => {
    o.progress(
      `  raw/${o.client}: ${clock.pages} pages, ${queue.length - head} queued, ${clock.rate().toFixed(0)} pages/s`,
    );
  }, 5000);

  const worker = async () => {
    for (;;) {
      if (Date.now() - started > budgetMs) {
        timedOut = true;
        wake();
        return;
      }
      const item = queue[head];
      if (item === undefined) {
        if (inFlight === 0) {
          wake();
          return;
        }
        await new Promise<void>((resolve) => waiters.push(resolve));
        continue;
      }
      head++;
      inFlight++;
      const [url, depth] = item;
      try {
        const page = await get(url);
        bytes += page.bytes;
        // Only a page whose links are followed is parsed, as every crawler in the bench does (crawl-cluster's
        // link spider, the Scrapy and Crawlee peers): a page at maxdepth is fetched and not parsed.
        let found: Link[] = [];
        if (depth < o.maxdepth) {
          found = extractLinks(page.text, url);
          links += found.length;
          for (const link of found) {
            if (seen.has(link.url)) continue;
            seen.add(link.url);
            queue.push([link.url, depth + 1]);
          }
        }
        if (o.publish && page.response) {
          const delivery: Promise<void> = o.publish({ url, depth, response: page.response, links: found }).then(
            () => {
              deliveries.delete(delivery);
              published++;
              clock.page();
              o.times?.push(Date.now());
            },
            (error: unknown) => {
              deliveries.delete(delivery);
              failed(url, error);
            },
          );
          deliveries.add(delivery);
          while (deliveries.size >= (o.maxPublishing ?? o.concurrency)) await Promise.race(deliveries);
        } else {
          clock.page();
          o.times?.push(Date.now());
        }
      } catch (error) {
        failed(url, error);
      } finally {
        inFlight--;
        wake();
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: o.concurrency }, worker));
    await Promise.all(deliveries);
  } finally {
    clearInterval(report);
    await agent?.close();
    await fetcher?.close();
  }
  return { ...clock.result(), client: o.client, errors, errorSamples, links, bytes, timedOut, published };
}

/**
 * One measured pass as the scenarios run it: an unmeasured warm-up crawl from `warmSeeds` first (JIT, connection pools,
 * the site's code paths; site-config.ts `benchWarmup`, {@link benchWarmupMaxdepth}), then the measured crawl from
 * the seeds to `maxdepth`.
 */
export async function rawPass(
  o: Omit<RawOptions, 'seeds'> & {
    url: (n: number) => string;
    seeds: number[];
    warmSeeds: number[];
    beforeMeasure?: () => void;
  },
): Promise<RawResult> {
  const { url, seeds, warmSeeds, beforeMeasure, ...rest } = o;
  await rawCrawl({ ...rest, seeds: warmSeeds.map(url), maxdepth: benchWarmupMaxdepth(o.maxdepth), progress: () => {} });
  beforeMeasure?.();
  return rawCrawl({ ...rest, seeds: seeds.map(url) });
}

/** What every scenario's raw passes crawl: the site from the seed plan's seeds, after the warm-up, at `concurrency`. */
export function siteRawInputs(
  site: { url: (n: number) => string; hostMap: string },
  plan: SeedPlan,
  warm: Warmup,
  concurrency: number,
  progress: (message: string) => void,
): Omit<Parameters<typeof rawPass>[0], 'client'> {
  return {
    url: site.url,
    seeds: plan.seeds,
    warmSeeds: warm.seeds,
    maxdepth: plan.maxdepth,
    concurrency,
    resolve: parseHostMap(site.hostMap),
    progress,
  };
}

/**
 * The peer a TypeScript user would pick (issue 8 `crawlee`): Crawlee's CheerioCrawler (@crawlee/cheerio,
 * a dev dependency) crawling the fixture site breadth first from the seeds to `maxdepth` with
 * `enqueueLinks` (strategy `all`: the fixture's links cross its host names), at a fixed concurrency (min =
 * max, so its autoscaler neither shrinks nor grows the pool; concurrency 0: its AutoscaledPool's defaults), with in-memory storage only
 * (`persistStorage: false`: no files) and its defaults otherwise (session pool, browser-like generated
 * headers, 3 retries, robots.txt not read). With `hostMap`, host names resolve through it (got's
 * `dnsLookup`, set in a pre-navigation hook), as our crawler's `CRAWLER_HOST_MAP` does.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { CheerioCrawler, Configuration, LogLevel, log } from '@crawlee/cheerio';
import { type PageClock, pageClock } from './pace.ts';

export interface CrawleeOptions {
  seeds: string[];
  maxdepth: number;
  /** Fixed concurrency (min = max); 0 leaves Crawlee's AutoscaledPool its defaults. */
  concurrency: number;
  progress: (message: string) => void;
  /** When given, the epoch ms of every page as it completes is pushed here. */
  times?: number[];
  /** Host name → address, resolved without DNS (the fixture site's host map). */
  hostMap?: Record<string, string>;
}

/** A `net` lookup that answers the host map's names itself and asks the system resolver for others. */
function hostMapLookup(map: Record<string, string>): LookupFunction {
  return ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    const address = map[hostname];
    if (address === undefined) return dnsLookup(hostname, options, callback as never);
    const family = address.includes(':') ? 6 : 4;
    if (options?.all) callback(null, [{ address, family } satisfies LookupAddress]);
    else callback(null, address, family);
  }) as LookupFunction;
}

export interface CrawleeResult extends PageClock {
  failed: number;
  links: number;
}

export async function crawleeCrawl(o: CrawleeOptions): Promise<CrawleeResult> {
  log.setLevel(LogLevel.ERROR);
  const clock = pageClock();
  let failed = 0;
  let links = 0;
  const config = new Configuration({ persistStorage: false, purgeOnStart: true, logLevel: LogLevel.ERROR });
  const lookup = o.hostMap ? hostMapLookup(o.hostMap) : undefined;
  const crawler = new CheerioCrawler(
    {
      ...(o.concurrency > 0 ? { minConcurrency: o.concurrency, maxConcurrency: o.concurrency } : {}),
      statusMessageLoggingInterval: 3600,
      preNavigationHooks: lookup
        ? [
            (_context, gotOptions) => {
              gotOptions.dnsLookup = lookup;
            },
          ]
        : [],
      async requestHandler({ request, enqueueLinks }) {
        const depth = (request.userData.depth as number | undefined) ?? 0;
        if (depth < o.maxdepth) {
          const r = await enqueueLinks({ strategy: 'all', userData: { depth: depth + 1 } });
          links += r.processedRequests.length;
        }
        clock.page();
        o.times?.push(Date.now());
      },
      failedRequestHandler() {
        failed++;
      },
    },
    config,
  );
  const report = setInterval(() => {
    o.progress(`  crawlee: ${clock.pages} pages, ${clock.rate().toFixed(0)} pages/s`);
  }, 5000);
  try {
    await crawler.run(o.seeds.map((url) => ({ url, userData: { depth: 0 } })));
  } finally {
    clearInterval(report);
    await crawler.teardown().catch(() => undefined);
  }
  return { ...clock.result(), failed, links };
}

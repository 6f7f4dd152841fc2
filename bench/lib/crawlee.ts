/**
 * The peer a TypeScript user would pick (issue 8 `crawlee`): Crawlee's CheerioCrawler (@crawlee/cheerio,
 * a dev dependency) crawling the fixture site breadth first from the seeds to `maxdepth` with
 * `enqueueLinks` (its default same-hostname strategy), at a fixed concurrency (min = max, so its autoscaler
 * neither shrinks nor grows the pool), with in-memory storage only (`persistStorage: false`: no files) and
 * its defaults otherwise (session pool, browser-like generated headers, 3 retries, robots.txt not read).
 */
import { CheerioCrawler, Configuration, LogLevel, log } from '@crawlee/cheerio';
import { type PageClock, pageClock } from './pace.ts';

export interface CrawleeOptions {
  seeds: string[];
  maxdepth: number;
  concurrency: number;
  progress: (message: string) => void;
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
  const crawler = new CheerioCrawler(
    {
      minConcurrency: o.concurrency,
      maxConcurrency: o.concurrency,
      statusMessageLoggingInterval: 3600,
      async requestHandler({ request, enqueueLinks }) {
        const depth = (request.userData.depth as number | undefined) ?? 0;
        if (depth < o.maxdepth) {
          const r = await enqueueLinks({ userData: { depth: depth + 1 } });
          links += r.processedRequests.length;
        }
        clock.page();
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

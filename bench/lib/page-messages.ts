/**
 * Page messages as the crawler builds them (UndiciFetcher → extractLinks → lib/crawl/page.ts buildPage →
 * lib/crawl/crawler/page-message.ts pageMessage) from distinct fixture pages of the bench's page shape
 * (BENCH_PAGE_SHAPES, bench/lib/site-config.ts), built before anything is timed.
 */
import { config } from '../../lib/config/index.ts';
import { pageMessage } from '../../lib/crawl/crawler/page-message.ts';
import { extractLinks } from '../../lib/crawl/extract/links.ts';
import { UndiciFetcher } from '../../lib/crawl/fetch/fetcher.ts';
import { buildPage } from '../../lib/crawl/page.ts';
import type { CrawlSettings } from '../../lib/frontier-model.ts';
import { startSite } from '../../localstack/site/site.ts';
import { parseHostMap } from './raw.ts';
import type { ScenarioContext } from './scenario.ts';
import { benchPageShapes, benchSiteOptions } from './site-config.ts';

/**
 * `count` page message values (JSON text), one per fixture page.
 * @param plain the site's plain pages instead of the bench's shape (`BENCH_COMPRESSION_SHAPE=plain`)
 */
export async function buildPageMessages(ctx: ScenarioContext, count: number, plain = false): Promise<string[]> {
  const [shape = 'article'] = benchPageShapes(['article']);
  const options = benchSiteOptions(undefined, plain ? 'plain' : shape);
  ctx.input('shape', options.template ?? 'plain');
  ctx.input('page_bytes', options.pageBytes ?? 0);
  const site = await startSite({ ...options, pages: Math.max(count, options.pages ?? 0) });
  const fetcher = new UndiciFetcher({ allowPrivateNetworks: true, resolve: parseHostMap(site.hostMap) });
  const vars = config();
  const crawl = { appid: 'bench', crawlid: ctx.name, spiderid: 'link', attrs: null } as unknown as CrawlSettings;
  const out: string[] = [];
  try {
    for (let n = 0; n < count; n++) {
      const url = site.url(n);
      const response = await fetcher.fetch({ url, userAgent: 'crawl-cluster-bench/1.0' });
      const links = extractLinks(response.text ?? '', response.url);
      const page = buildPage({ url, depth: 1, priority: 0, retries: 0, crawl }, response, links, {
        base64: false,
        success: true,
      });
      const m = await pageMessage(page, { maxBytes: vars.KAFKA_MAX_MESSAGE_BYTES, base64: false, bodyKey: () => '' });
      out.push(m.value.toString());
    }
  } finally {
    await fetcher.close();
    await site.close();
  }
  return out;
}

/**
 * The `browser` spider (docs/spiders-browser.md): the `link` spider's rules on pages rendered in headless Chromium.
 * Its requests are leased only by browser workers (`CRAWLER_SPIDERS=browser`, `local --browser-workers N`), whose
 * fetcher loads each page in the browser (lib/crawl/browser/fetcher.ts), so the links it follows are those of the
 * rendered DOM, and the page's body is the rendered HTML. Another spider asks for rendering by handing a request off
 * to it (`follow: [{ url, spider: 'browser' }]`).
 */
import { shouldFollow } from '../extract/filters.ts';
import type { Spider, SpiderContext, SpiderResult } from '../types.ts';

/** The spider type whose requests browser workers lease. */
export const BROWSER_SPIDER = 'browser';

export const browserSpider: Spider = {
  name: BROWSER_SPIDER,
  wantsLinks: (request) => shouldFollow(request.depth, request.crawl.maxdepth),
  parse({ request, links }: SpiderContext): SpiderResult {
    if (!shouldFollow(request.depth, request.crawl.maxdepth)) return {};
    return { follow: links.map((link) => ({ url: link.url })) };
  },
};

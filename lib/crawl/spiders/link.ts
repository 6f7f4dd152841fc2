/**
 * The `link` spider (Scrapy Cluster's `link_spider`): follows every link that passes the crawl's
 * filters, until the crawl's maxdepth. It never asks for the page's document, so it costs no DOM, and it wants no
 * links of a page at the crawl's maxdepth, so such a page is not parsed at all (its message has `links: []`, as
 * Scrapy Cluster's link spider sends it).
 */
import { shouldFollow } from '../extract/filters.ts';
import type { Spider, SpiderContext, SpiderResult } from '../types.ts';

export const linkSpider: Spider = {
  name: 'link',
  wantsLinks: (request) => shouldFollow(request.depth, request.crawl.maxdepth),
  parse({ request, links }: SpiderContext): SpiderResult {
    if (!shouldFollow(request.depth, request.crawl.maxdepth)) return {};
    return { follow: links.map((link) => ({ url: link.url })) };
  },
};

/**
 * The `link` spider (Scrapy Cluster's `link_spider`): follows every link that passes the crawl's
 * filters, until the crawl's maxdepth. It never asks for the page's document, so it costs no DOM.
 */
import { shouldFollow } from '../filters.ts';
import type { Spider, SpiderContext, SpiderResult } from '../types.ts';

export const linkSpider: Spider = {
  name: 'link',
  parse({ request, links }: SpiderContext): SpiderResult {
    if (!shouldFollow(request.depth, request.crawl.maxdepth)) return {};
    return { follow: links.map((link) => ({ url: link.url })) };
  },
};

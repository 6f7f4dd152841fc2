/**
 * The `link` spider (Scrapy Cluster's `link_spider`): follows every link that passes the crawl's
 * filters, until the crawl's maxdepth.
 */
import { shouldFollow } from '../filters.ts';
import type { FollowRequest, Link, Spider, SpiderRequest } from '../types.ts';

export const linkSpider: Spider = {
  name: 'link',
  follow(request: SpiderRequest, _response, links: Link[]): FollowRequest[] {
    if (!shouldFollow(request.depth, request.crawl.maxdepth)) return [];
    return links.map((link) => ({ url: link.url }));
  },
};

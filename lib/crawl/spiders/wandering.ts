/**
 * The `wandering` spider (Scrapy Cluster's `wandering_spider`): follows one link chosen at random per
 * page, a random walk through the site until the crawl's maxdepth.
 */
import { shouldFollow } from '../filters.ts';
import type { FollowRequest, Link, Spider, SpiderRequest } from '../types.ts';

/**
 * A wandering spider drawing from `random` (uniform in [0, 1), like `Math.random`); tests pass a
 * seeded generator to make the walk repeatable.
 */
export function createWanderingSpider(random: () => number = Math.random): Spider {
  return {
    name: 'wandering',
    follow(request: SpiderRequest, _response, links: Link[]): FollowRequest[] {
      if (links.length === 0 || !shouldFollow(request.depth, request.crawl.maxdepth)) return [];
      // min() guards a generator that returns exactly 1.
      const index = Math.min(Math.floor(random() * links.length), links.length - 1);
      return [{ url: (links[index] as Link).url }];
    },
  };
}

export const wanderingSpider: Spider = createWanderingSpider();

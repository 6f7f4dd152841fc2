/**
 * The `wandering` spider (Scrapy Cluster's `wandering_spider`): follows one link chosen at random per
 * page, a random walk through the site until a page has no link to follow. As in Scrapy Cluster the walk
 * is not bound by the crawl's `maxdepth`; it is bound by {@link MAX_WANDERING_STEPS} instead, so a site
 * that links on forever (a hostile or generated one) cannot keep one crawl going forever.
 *
 * Scrapy Cluster counts the walk's hops in the request's meta, `step` (the seed 0, each hop + 1), and
 * sends it in the page's `attrs`. Here a hop is one level of depth (a child is at its page's depth + 1,
 * the seed at 0), so a request's step is its depth: {@link wanderingAttrs}.
 */
import type { Link, Spider, SpiderContext, SpiderRequest, SpiderResult } from '../types.ts';

/** The most hops a walk takes (a page at this step follows nothing). */
export const MAX_WANDERING_STEPS = 100;

/** A request's step in its walk (Scrapy Cluster's `meta['step']`): its depth, the seed's is 0. */
export function wanderingStep(request: Pick<SpiderRequest, 'depth'>): number {
  return request.depth;
}

/**
 * The `attrs` Scrapy Cluster's wandering spider sends with a page: the request's attrs (the crawl's, `{}` when
 * it has none) with `step` set to the request's step.
 */
export function wanderingAttrs(request: Pick<SpiderRequest, 'depth' | 'crawl' | 'attrs'>): Record<string, unknown> {
  return { ...(request.attrs ?? request.crawl.attrs ?? {}), step: wanderingStep(request) };
}

/**
 * A wandering spider drawing from `random` (uniform in [0, 1), like `Math.random`); tests pass a
 * seeded generator to make the walk repeatable.
 */
export function createWanderingSpider(random: () => number = Math.random, maxSteps = MAX_WANDERING_STEPS): Spider {
  return {
    name: 'wandering',
    boundsItself: true,
    attrs: wanderingAttrs,
    parse({ request, links }: SpiderContext): SpiderResult {
      if (links.length === 0 || wanderingStep(request) >= maxSteps) return {};
      // min() guards a generator that returns exactly 1.
      const index = Math.min(Math.floor(random() * links.length), links.length - 1);
      return { follow: [{ url: (links[index] as Link).url }] };
    },
  };
}

export const wanderingSpider: Spider = createWanderingSpider();

import { describe, expect, it } from 'vitest';
import builtInSpiders, { BUILT_IN_SPIDERS } from '../../lib/crawl/spiders/index.ts';
import { linkSpider } from '../../lib/crawl/spiders/link.ts';
import {
  createWanderingSpider,
  MAX_WANDERING_STEPS,
  wanderingAttrs,
  wanderingStep,
} from '../../lib/crawl/spiders/wandering.ts';
import type { FetchResult, FollowRequest, Link, Spider, SpiderRequest } from '../../lib/crawl/types.ts';
import { prng } from '../../localstack/site/prng.ts';

function request(depth: number, maxdepth: number): SpiderRequest {
  return {
    url: 'http://a.example/',
    depth,
    priority: 1 - 10 * depth,
    retries: 0,
    crawl: { appid: 'app', crawlid: 'c1', spiderid: 'link', priority: 1, maxdepth, expires: 0 },
  };
}

const response: FetchResult = {
  requestUrl: 'http://a.example/',
  url: 'http://a.example/',
  status: 200,
  statusText: 'OK',
  headers: {},
  requestHeaders: {},
  body: Buffer.alloc(0),
  text: '',
  encoding: 'utf-8',
  truncated: false,
  redirects: [],
  fetchedMs: 1,
};

const links: Link[] = Array.from({ length: 10 }, (_, i) => ({ url: `http://a.example/${i}`, text: `${i}` }));

/** What a spider follows on a page with these links (its parse() with a context of them; sync spiders only). */
function follows(spider: Spider, req: SpiderRequest, _response: FetchResult, pageLinks: Link[]): FollowRequest[] {
  const result = spider.parse({
    request: req,
    response,
    links: pageLinks,
    $: () => {
      throw new Error('no DOM here');
    },
  });
  if (result instanceof Promise) throw new Error('a sync spider was expected');
  return result.follow ?? [];
}

describe('link spider', () => {
  it('follows every link it is given, in order, with the same spider type', () => {
    expect(follows(linkSpider, request(0, 1), response, links)).toEqual(links.map((l) => ({ url: l.url })));
  });

  it('follows nothing at maxdepth', () => {
    expect(follows(linkSpider, request(1, 1), response, links)).toEqual([]);
    expect(follows(linkSpider, request(0, 0), response, links)).toEqual([]);
  });
});

describe('wandering spider', () => {
  it('follows exactly one of the page’s links', () => {
    const follow = follows(createWanderingSpider(prng(1)), request(0, 3), response, links);
    expect(follow).toHaveLength(1);
    expect(links.map((l) => l.url)).toContain(follow[0]?.url);
  });

  it('walks the same way for the same seed, and another way for another seed', () => {
    const walk = (seed: number) => {
      const spider = createWanderingSpider(prng(seed));
      return Array.from({ length: 20 }, () => follows(spider, request(0, 3), response, links)[0]?.url);
    };
    expect(walk(7)).toEqual(walk(7));
    expect(walk(7)).not.toEqual(walk(8));
  });

  it('picks the link the generator points at, including the ends of the range', () => {
    const pick = (r: number) =>
      follows(
        createWanderingSpider(() => r),
        request(0, 1),
        response,
        links,
      )[0]?.url;
    expect(pick(0)).toBe('http://a.example/0');
    expect(pick(0.55)).toBe('http://a.example/5');
    expect(pick(0.999_999)).toBe('http://a.example/9');
    expect(pick(1)).toBe('http://a.example/9');
  });

  it('reaches every link over many pages', () => {
    const spider = createWanderingSpider(prng(3));
    const seen = new Set<string>();
    for (let i = 0; i < 500; i++) seen.add(follows(spider, request(0, 3), response, links)[0]?.url as string);
    expect(seen.size).toBe(links.length);
  });

  it('follows nothing when the page has no links', () => {
    expect(follows(createWanderingSpider(prng(1)), request(0, 2), response, [])).toEqual([]);
  });

  // Scrapy Cluster's wandering spider never looks at maxdepth (whose default is 0): it walks on.
  it('is not bound by maxdepth: it follows one link at, and past, the crawl’s maxdepth', () => {
    const spider = createWanderingSpider(prng(1));
    expect(follows(spider, request(0, 0), response, links)).toHaveLength(1);
    expect(follows(spider, request(2, 2), response, links)).toHaveLength(1);
    expect(follows(spider, request(50, 1), response, links)).toHaveLength(1);
  });

  it('stops after MAX_WANDERING_STEPS hops (a site that links on forever), or the cap it is given', () => {
    expect(MAX_WANDERING_STEPS).toBe(100);
    const spider = createWanderingSpider(prng(1));
    expect(follows(spider, request(MAX_WANDERING_STEPS - 1, 0), response, links)).toHaveLength(1);
    expect(follows(spider, request(MAX_WANDERING_STEPS, 0), response, links)).toEqual([]);
    expect(follows(spider, request(MAX_WANDERING_STEPS + 5, 0), response, links)).toEqual([]);
    const short = createWanderingSpider(prng(1), 3);
    expect(follows(short, request(2, 0), response, links)).toHaveLength(1);
    expect(follows(short, request(3, 0), response, links)).toEqual([]);
  });

  it('counts a request’s step as Scrapy Cluster does: the seed 0, each hop one more (its depth)', () => {
    expect(wanderingStep(request(0, 0))).toBe(0);
    expect(wanderingStep(request(7, 0))).toBe(7);
  });

  it('gives a page attrs with step: the crawl’s attrs plus step, {} plus step without attrs', () => {
    expect(wanderingAttrs(request(0, 0))).toEqual({ step: 0 });
    const withAttrs = { ...request(3, 0), crawl: { ...request(3, 0).crawl, attrs: { who: 'me', step: 'old' } } };
    expect(wanderingAttrs(withAttrs)).toEqual({ who: 'me', step: 3 });
    expect(withAttrs.crawl.attrs).toEqual({ who: 'me', step: 'old' });
  });
});

describe('built-in spiders', () => {
  it('are link, wandering, sitemap and browser, under their names', () => {
    expect(builtInSpiders.map((s) => s.name).sort()).toEqual(['browser', 'link', 'sitemap', 'wandering']);
    expect(new Set(builtInSpiders.map((s) => s.name))).toEqual(BUILT_IN_SPIDERS);
    expect(builtInSpiders).toContain(linkSpider);
  });
});

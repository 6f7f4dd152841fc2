/**
 * An example of two spider types handing requests to each other (docs/spiders.md):
 *
 * - `catalog` crawls listing pages: it hands every product link (`/products/<n>`) to `product-page`, at a higher
 *   priority (details first) and with `attrs.listed_on` (the listing page), and follows other links itself.
 * - `product-page` reads the product's name (`<h1>`) into `data`, with the listing page it was found on, and
 *   follows nothing.
 *
 * Run it: CRAWLER_PLUGINS=examples/hand-off/shop.ts crawl-cluster local, then feed
 * {"appid":"app","crawlid":"s1","url":"https://shop.example/catalog","spiderid":"catalog","maxdepth":1}. Pages of
 * `product-page` arrive with `"spiderid":"product-page"`, and each type's part of the crawl has its own `complete`
 * notice.
 */
import type { Spider } from '../../lib/crawl/types.ts';

const PRODUCT_PATH = /^\/products\/\d+$/;

export const catalogSpider: Spider = {
  name: 'catalog',
  parse({ request, links }) {
    if (request.depth >= request.crawl.maxdepth) return {};
    return {
      follow: links.map((link) =>
        PRODUCT_PATH.test(new URL(link.url).pathname)
          ? { url: link.url, spider: 'product-page', priority: request.priority, attrs: { listed_on: request.url } }
          : { url: link.url },
      ),
    };
  },
};

export const productPageSpider: Spider = {
  name: 'product-page',
  parse({ request, $ }) {
    return { data: { name: $()('h1').first().text().trim(), listed_on: request.attrs?.listed_on ?? null } };
  },
};

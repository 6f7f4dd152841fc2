/**
 * An example spider plugin (docs/spiders.md): `products` reads the schema.org Product data that pages
 * publish as JSON-LD (`<script type="application/ld+json">`) and puts it in the page message's `data`; it follows
 * links as the built-in `link` spider does (to the crawl's maxdepth).
 *
 * Run it: CRAWLER_PLUGINS=examples/json-ld-products/products.ts crawl-cluster local, then feed
 * {"appid":"app","crawlid":"p1","url":"https://shop.example/","spiderid":"products","maxdepth":1}.
 *
 * It imports only types from crawl-cluster, so the same file works as a plugin of any crawler image.
 */
import type { Spider, SpiderContext, SpiderResult } from '../../lib/crawl/types.ts';

/** One product as this spider reports it. */
export interface Product {
  name?: string;
  sku?: string;
  price?: string;
  currency?: string;
}

function isProduct(node: unknown): node is Record<string, unknown> {
  if (node === null || typeof node !== 'object') return false;
  const type = (node as Record<string, unknown>)['@type'];
  return type === 'Product' || (Array.isArray(type) && type.includes('Product'));
}

/** The Product nodes of one JSON-LD document: the root, an array, or a `@graph`. */
function productsIn(doc: unknown): Record<string, unknown>[] {
  if (Array.isArray(doc)) return doc.flatMap(productsIn);
  if (doc === null || typeof doc !== 'object') return [];
  const graph = (doc as Record<string, unknown>)['@graph'];
  return [...(isProduct(doc) ? [doc] : []), ...(Array.isArray(graph) ? graph.flatMap(productsIn) : [])];
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' || typeof value === 'number' ? String(value) : undefined;
}

function toProduct(node: Record<string, unknown>): Product {
  const offer = Array.isArray(node.offers) ? node.offers[0] : node.offers;
  const o = (offer ?? {}) as Record<string, unknown>;
  return { name: text(node.name), sku: text(node.sku), price: text(o.price), currency: text(o.priceCurrency) };
}

export const productsSpider: Spider = {
  name: 'products',
  parse(context: SpiderContext): SpiderResult {
    const { request, links } = context;
    // The document is built only for pages that may carry JSON-LD: HTML.
    const type = context.response.headers['content-type']?.[0] ?? '';
    const products: Product[] = [];
    if (/html/i.test(type)) {
      const $ = context.$();
      $('script[type="application/ld+json"]').each((_, el) => {
        try {
          products.push(...productsIn(JSON.parse($(el).text())).map(toProduct));
        } catch {
          // a broken JSON-LD block is the site's problem: skip it
        }
      });
    }
    const follow = request.depth < request.crawl.maxdepth ? links.map((l) => ({ url: l.url })) : [];
    return products.length > 0 ? { data: { products }, follow } : { follow };
  },
};

export default productsSpider;

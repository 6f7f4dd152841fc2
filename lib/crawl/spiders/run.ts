/**
 * Running a spider on one page (lib/crawl/types.ts `Spider`): the context it gets (links filtered by the crawl's
 * rules, a cheerio document built only on demand), the bound on the `data` it returns, and the per-request attrs
 * that ride with a queued URL.
 *
 * Per-request attrs ({@link FollowRequest.attrs}) travel in the queued URL's fragment, `#cc-attrs=<base64url JSON>`:
 * the frontier stores a request as its URL (docs/design.md §3 "Compact"), a fragment never reaches the server, and
 * the dupefilter's canonical URL drops it, so a URL with attrs is the same request as without. The crawler takes
 * the fragment off before anything else sees the URL ({@link splitRequestUrl}).
 */
import { Buffer } from 'node:buffer';
import { type CheerioAPI, load } from 'cheerio/slim';
import {
  type FetchResult,
  type FollowRequest,
  type Link,
  MAX_DATA_BYTES,
  MAX_FOLLOW_ATTRS_BYTES,
  type PageItem,
  type Spider,
  type SpiderContext,
  type SpiderRequest,
  type SpiderResult,
} from '../types.ts';

const ATTRS_FRAGMENT = '#cc-attrs=';

/**
 * A queued URL split into the URL requested and the attrs its parent gave it (see the module doc). A fragment
 * that does not decode to a JSON object is left in the URL, as any other fragment.
 */
export function splitRequestUrl(queued: string): { url: string; attrs?: Record<string, unknown> } {
  const at = queued.lastIndexOf(ATTRS_FRAGMENT);
  if (at < 0) return { url: queued };
  try {
    const attrs = JSON.parse(Buffer.from(queued.slice(at + ATTRS_FRAGMENT.length), 'base64url').toString('utf8'));
    if (attrs !== null && typeof attrs === 'object' && !Array.isArray(attrs)) {
      return { url: queued.slice(0, at), attrs: attrs as Record<string, unknown> };
    }
  } catch {
    // not ours: an ordinary fragment
  }
  return { url: queued };
}

/**
 * The URL to queue for `url` with these attrs (its own fragment, which no server sees, replaced), or undefined
 * when the attrs are not a JSON object of at most {@link MAX_FOLLOW_ATTRS_BYTES}.
 */
export function queuedUrl(url: string, attrs: Record<string, unknown> | undefined): string | undefined {
  if (attrs === undefined) return url;
  let json: string;
  try {
    json = JSON.stringify(attrs);
  } catch {
    return undefined;
  }
  if (json === undefined || !json.startsWith('{') || Buffer.byteLength(json) > MAX_FOLLOW_ATTRS_BYTES) return undefined;
  const hash = url.indexOf('#');
  return `${hash < 0 ? url : url.slice(0, hash)}${ATTRS_FRAGMENT}${Buffer.from(json).toString('base64url')}`;
}

/** The attrs of a request: the crawl's with the parent's on top, or undefined when neither has any. */
export function mergeAttrs(
  crawl: Record<string, unknown> | undefined,
  own: Record<string, unknown> | undefined,
): Record<string, unknown> | undefined {
  if (own === undefined) return crawl;
  return { ...(crawl ?? {}), ...own };
}

const EMPTY_RESULT: SpiderResult = {};

/**
 * Runs `spider` on a page with `links`, the page's links the crawl's rules let through (the caller's
 * `followable`, lib/crawl/extract/filters.ts); its document is parsed only if it asks for it. Whatever the spider throws is thrown on (the caller's failure path makes a `success:false` page).
 */
export function runSpider(
  spider: Spider | undefined,
  request: SpiderRequest,
  response: FetchResult,
  links: Link[],
): SpiderResult | Promise<SpiderResult> {
  if (spider === undefined) return EMPTY_RESULT;
  let document: CheerioAPI | undefined;
  const context: SpiderContext = {
    request,
    response,
    links,
    $: () => {
      document ??= load(response.text ?? '', { baseURI: response.url });
      return document;
    },
  };
  // A synchronous parse (the built-ins') stays synchronous: no promise, and no time budget to race (crawler.ts).
  const result = spider.parse(context);
  return typeof (result as Partial<PromiseLike<SpiderResult>> | undefined)?.then === 'function'
    ? Promise.resolve(result).then((r) => checkResult(spider, r))
    : checkResult(spider, result as SpiderResult);
}

function checkResult(spider: Spider, result: SpiderResult): SpiderResult {
  if (result === undefined || result === null || typeof result !== 'object') return EMPTY_RESULT;
  if (result.follow !== undefined && !Array.isArray(result.follow)) {
    throw new TypeError(`spider ${spider.name}: parse() returned a follow that is not an array`);
  }
  return result;
}

/**
 * Puts a spider's `data` on the page: JSON of at most {@link MAX_DATA_BYTES}, else `null` with `data_truncated`
 * (also for a value JSON cannot hold: a cycle, a BigInt, a function). No `data` leaves the page without the field.
 */
export function putData(page: PageItem, data: unknown, maxBytes = MAX_DATA_BYTES): void {
  if (data === undefined) return;
  let json: string | undefined;
  try {
    json = JSON.stringify(data);
  } catch {
    json = undefined;
  }
  if (json === undefined || Buffer.byteLength(json) > maxBytes) {
    page.data = null;
    page.data_truncated = true;
    return;
  }
  // The JSON form, not the object: what is sent is what was measured (toJSON, dropped undefined...).
  page.data = JSON.parse(json) as unknown;
}

/** The follow entries of a result, or none. */
export function followOf(result: SpiderResult): FollowRequest[] {
  return result.follow ?? [];
}

/**
 * The page message on `<p>.crawled_firehose` (CONTRACT.md "Pages"): one per crawled page, and one per
 * request that failed for good, so nothing an application asked for disappears without a trace.
 */
import { Buffer } from 'node:buffer';
import { STATUS_CODES } from 'node:http';
import type { FetchResult, Link, PageItem, SpiderRequest } from './types.ts';

/**
 * The request a page answers. `spiderid` is the spider type that handled it, which differs from the
 * crawl's when a spider handed the request to another type. @default request.crawl.spiderid
 */
export type PageRequest = SpiderRequest & { spiderid?: string };

export interface PageOptions {
  /** Send the body base64-encoded (`KAFKA_BASE_64_ENCODE`). */
  base64: boolean;
  /** False for a request that failed for good; the page then carries `exception`. */
  success: boolean;
  /** Why the request failed (`success: false`), e.g. `robots.txt disallow` or `HTTP 503`. */
  exception?: string;
  /**
   * How many times the request was retried before this outcome (CONTRACT **Ext** `retry_times`).
   * @default request.retries
   */
  retryTimes?: number;
  /**
   * The page's time.
   * @default Date.now()
   */
  now?: number;
}

/** `YYYY-MM-DDTHH:mm:ss.SSS` in UTC, Scrapy Cluster's timestamp (ISO 8601 without the zone). */
export function pageTimestamp(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 23);
}

/**
 * `body` and `encoding` of a page:
 * - a textual response (the fetcher decoded it): the text and its charset, or with `base64` the
 *   response bytes base64-encoded and the charset they are in;
 * - a binary response (no text): always base64 of the bytes, encoding `base64`;
 * - no response: empty body, empty encoding.
 */
function bodyOf(response: FetchResult | undefined, base64: boolean): { body: string; encoding: string } {
  if (response === undefined) return { body: '', encoding: '' };
  if (response.text === undefined) return { body: response.body.toString('base64'), encoding: 'base64' };
  return {
    body: base64 ? response.body.toString('base64') : response.text,
    encoding: response.encoding ?? 'utf-8',
  };
}

/**
 * Builds a page item. With a response, its URL, status, reason phrase, headers and body are copied;
 * without one (a fetch error, a robots.txt disallow), the response fields are empty and `status_code`
 * is null. `attrs` echoes the crawl's (`{}` when it has none). `body_ref` is the producer's business:
 * it offloads bodies too big for a message. `body_truncated` is set when the fetcher cut the body at
 * its size limit.
 */
export function buildPage(
  request: PageRequest,
  response: FetchResult | undefined,
  links: Link[],
  options: PageOptions,
): PageItem {
  const { body, encoding } = bodyOf(response, options.base64);
  const page: PageItem = {
    appid: request.crawl.appid,
    crawlid: request.crawl.crawlid,
    spiderid: request.spiderid ?? request.crawl.spiderid,
    url: request.url,
    response_url: response?.url ?? request.url,
    status_code: response?.status ?? null,
    status_msg: response?.statusText ?? '',
    response_headers: response?.headers ?? {},
    request_headers: response?.requestHeaders ?? {},
    body,
    encoding,
    links,
    attrs: request.crawl.attrs ?? {},
    success: options.success,
    timestamp: pageTimestamp(options.now ?? Date.now()),
    depth: request.depth,
    fetched_ms: response?.fetchedMs ?? 0,
    retry_times: options.retryTimes ?? request.retries,
  };
  if (options.exception !== undefined) page.exception = options.exception;
  if (response?.truncated === true) page.body_truncated = true;
  return page;
}

/**
 * The page for a request that failed for good (CONTRACT **Fix**): `success: false`, the reason, and
 * the last status code if there was a response. Given the last response itself, its status, reason
 * phrase, headers and body are in the page as {@link buildPage} puts them; given only a status code,
 * `status_msg` is its standard reason phrase.
 *
 * @param exception why, e.g. `retries exhausted: HTTP 503`, `robots.txt disallows this URL`
 * @param last the last response, or its status code, when there was one
 * @param base64 as {@link PageOptions.base64} (only matters with a response)
 */
export function failedPage(
  request: PageRequest,
  exception: string,
  last?: FetchResult | number,
  base64 = false,
  now?: number,
): PageItem {
  const response = typeof last === 'number' ? undefined : last;
  const page = buildPage(request, response, [], { base64, success: false, exception, now });
  if (typeof last === 'number') {
    page.status_code = last;
    page.status_msg = STATUS_CODES[last] ?? '';
  }
  return page;
}

/** Room left for the truncation flags and JSON punctuation a cut adds. */
const FIT_SLACK_BYTES = 128;

function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8');
}

/**
 * The longest prefix of `text` whose JSON string form takes at most `bytes` bytes (never ending inside a
 * surrogate pair; base64 bodies are cut to whole quads so the prefix still decodes).
 */
function fitString(text: string, bytes: number, base64: boolean): string {
  let n = Math.min(text.length, Math.max(0, bytes - 2));
  for (;;) {
    if (n > 0 && /[\uD800-\uDBFF]/.test(text.charAt(n - 1))) n--;
    if (base64) n -= n % 4;
    const size = jsonBytes(text.slice(0, n));
    if (size <= bytes || n === 0) return text.slice(0, n);
    // JSON escapes and multi-byte characters: shrink in proportion, at least by one.
    n = Math.min(n - 1, Math.floor((n * bytes) / size));
  }
}

/**
 * The page as a Kafka message value of at most `maxBytes` (DESIGN.md §10: messages always fit the broker's
 * limit), or undefined when even an empty body and no links do not fit. What is cut, in order:
 * 1. the body (`body_truncated: true`; the producer stores the whole body first when it has a body store);
 * 2. the links, keeping the first ones in document order (**Ext** `links_truncated: true`);
 * 3. `attrs`, as a last resort (**Ext** `attrs_truncated: true`): a crawl's attrs are bounded at validation,
 *    so only a crawl queued before those bounds can get here.
 * Links are kept before the body because the body can be offloaded (`body_ref`) and links cannot.
 * Linear in the page's size: one serialization of the page, one per link, a few of the body's prefix.
 * @param base64Body the body is base64 (binary, or `KAFKA_BASE_64_ENCODE`): it is cut to whole quads.
 */
export function fitPageMessage(page: PageItem, maxBytes: number, base64Body: boolean): string | undefined {
  const whole = JSON.stringify(page);
  if (Buffer.byteLength(whole, 'utf8') <= maxBytes) return whole;
  const bare: PageItem = { ...page, body: '', links: [], body_truncated: true, links_truncated: true };
  let fixed = jsonBytes(bare) + FIT_SLACK_BYTES;
  if (fixed > maxBytes) {
    bare.attrs = {};
    bare.attrs_truncated = true;
    fixed = jsonBytes(bare) + FIT_SLACK_BYTES;
    if (fixed > maxBytes) return undefined;
  }
  let room = maxBytes - fixed;
  const links: PageItem['links'] = [];
  for (const link of page.links) {
    const size = jsonBytes(link) + 1;
    if (size > room) break;
    links.push(link);
    room -= size;
  }
  const fitted: PageItem = { ...page, attrs: bare.attrs, links };
  if (bare.attrs_truncated) fitted.attrs_truncated = true;
  if (links.length < page.links.length) {
    fitted.links_truncated = true;
    room = 0;
  }
  if (jsonBytes(page.body) > room + 2) {
    fitted.body = fitString(page.body, room, base64Body);
    fitted.body_truncated = true;
  }
  const value = JSON.stringify(fitted);
  return Buffer.byteLength(value, 'utf8') <= maxBytes ? value : undefined;
}

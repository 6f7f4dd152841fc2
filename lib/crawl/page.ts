/**
 * The page message on `<p>.crawled_firehose` (CONTRACT.md "Pages"): one per crawled page, and one per
 * request that failed for good, so nothing an application asked for disappears without a trace.
 */
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

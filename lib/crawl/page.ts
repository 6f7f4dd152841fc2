/**
 * The page message on `<p>.crawled_firehose` (docs/contract.md "Pages"): one per crawled page, and one per
 * request that failed for good, so nothing an application asked for disappears without a trace.
 */
import { STATUS_CODES } from 'node:http';
import type { SkippedLinks } from './extract/filters.ts';
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
 * A header name as Scrapy sends it: `Headers.normkey`, which is Python's `str.title()`. Every letter that
 * starts the name or follows a non-letter is upper-case, every other letter lower-case: `content-type` →
 * `Content-Type`, `www-authenticate` → `Www-Authenticate`, `etag` → `Etag`, `p3p` → `P3P`.
 */
export function titleCaseHeader(name: string): string {
  return name.replace(
    /(\p{L})(\p{L}*)/gu,
    (_, first: string, rest: string) => first.toUpperCase() + rest.toLowerCase(),
  );
}

/** Header names already title-cased: the same few dozen names come on every page. */
const TITLE_CASED = new Map<string, string>();

/** Names remembered at most (a hostile server can send any number of distinct names). */
const TITLE_CASED_MAX = 1000;

/** {@link titleCaseHeader}, remembered. */
function titleCased(name: string): string {
  let key = TITLE_CASED.get(name);
  if (key === undefined) {
    key = titleCaseHeader(name);
    if (TITLE_CASED.size < TITLE_CASED_MAX) TITLE_CASED.set(name, key);
  }
  return key;
}

/** Headers with their names as Scrapy sends them ({@link titleCaseHeader}); values stay lists. */
function titleCaseHeaders(headers: Record<string, string[]> | undefined): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [name, values] of Object.entries(headers ?? {})) {
    const key = titleCased(name);
    // Names differing only in case cannot come from the fetcher (it lower-cases them), but keep every value.
    out[key] = Object.hasOwn(out, key) ? [...(out[key] ?? []), ...values] : values;
  }
  return out;
}

/**
 * WHATWG encoding names (what the fetcher's decoder reports) that Python's `codecs` does not know, mapped
 * to the Python codec that decodes the same bytes, or null when there is none (`x-user-defined`). Every
 * other WHATWG name is also a Python codec name.
 */
const PYTHON_CODECS: Readonly<Record<string, string | null>> = {
  'iso-8859-8-i': 'iso-8859-8',
  'windows-874': 'cp874',
  'x-mac-cyrillic': 'mac-cyrillic',
  'x-user-defined': null,
};

/**
 * The page's `encoding` for a charset the fetcher decoded with: a codec name Python knows (Scrapy Cluster's
 * clients call `body.decode(encoding)`), or null when Python has none.
 */
export function pythonCodec(charset: string): string | null {
  const name = charset.toLowerCase();
  return Object.hasOwn(PYTHON_CODECS, name) ? (PYTHON_CODECS[name] ?? null) : name;
}

/**
 * The `encoding` of a body sent as base64 of bytes that are not text (or text in a charset Python has no codec for):
 * Latin-1 maps every byte to one character, so `base64.b64decode(body).decode(encoding)` never fails and gives back
 * one character per byte, as sent (Scrapy Cluster's `kafkadump.py dump -d` does exactly that; docs/contract.md).
 */
export const BINARY_ENCODING = 'latin-1';

/** The `encoding` of a page without a response: its body is empty, and decodes as UTF-8 like any other. */
const EMPTY_ENCODING = 'utf-8';

/**
 * `body`, `encoding` and `body_encoding` of a page; `encoding` is always a Python codec name that decodes the body's
 * bytes (docs/contract.md: Scrapy Cluster's clients call `.decode(encoding)` on it):
 * - a textual response (the fetcher decoded it): the text and its charset, or with `base64` the
 *   response bytes base64-encoded, the charset they are in, and `body_encoding: "base64"`;
 * - a binary response (no text), or one in a charset Python has no codec for (`x-user-defined`): always base64 of
 *   the bytes, `encoding` {@link BINARY_ENCODING}, `body_encoding: "base64"`;
 * - no response: empty body, `encoding` {@link EMPTY_ENCODING}.
 */
function bodyOf(
  response: FetchResult | undefined,
  base64: boolean,
): { body: string; encoding: string; bodyEncoding?: 'base64' } {
  if (response === undefined) return { body: '', encoding: EMPTY_ENCODING };
  const { text } = response;
  const encoding = text === undefined ? null : pythonCodec(response.encoding ?? 'utf-8');
  if (text === undefined || encoding === null)
    return { body: response.body.toString('base64'), encoding: BINARY_ENCODING, bodyEncoding: 'base64' };
  return base64
    ? { body: response.body.toString('base64'), encoding, bodyEncoding: 'base64' }
    : { body: text, encoding };
}

/**
 * Builds a page item. With a response, its URL, status, reason phrase, headers and body are copied;
 * without one (a fetch error, a robots.txt disallow), the response fields are empty and `status_code`
 * is null. Header names are Title-Case as Scrapy sends them ({@link titleCaseHeader}). `attrs` echoes the
 * crawl's (null when it has none, as Scrapy Cluster sends `None`). `body_ref` is the producer's business:
 * it offloads bodies too big for a message. When the fetcher cut the body, `body_truncated` is set with `body_cut`
 * (why: its size limit or the memory budget) and `body_cut_bytes` (the decoded bytes kept). With per-request attrs (a parent's follow entry set them), `attrs` echoes those merged over the
 * crawl's.
 */
export function buildPage(
  request: PageRequest,
  response: FetchResult | undefined,
  links: Link[],
  options: PageOptions,
): PageItem {
  const { body, encoding, bodyEncoding } = bodyOf(response, options.base64);
  const page: PageItem = {
    appid: request.crawl.appid,
    crawlid: request.crawl.crawlid,
    spiderid: request.spiderid ?? request.crawl.spiderid,
    url: request.url,
    response_url: response?.url ?? request.url,
    status_code: response?.status ?? null,
    status_msg: response?.statusText ?? '',
    response_headers: titleCaseHeaders(response?.headers),
    request_headers: titleCaseHeaders(response?.requestHeaders),
    body,
    encoding,
    links,
    attrs: request.attrs ?? request.crawl.attrs ?? null,
    success: options.success,
    timestamp: pageTimestamp(options.now ?? Date.now()),
    depth: request.depth,
    fetched_ms: response?.fetchedMs ?? 0,
    retry_times: options.retryTimes ?? request.retries,
  };
  if (bodyEncoding !== undefined) page.body_encoding = bodyEncoding;
  if (options.exception !== undefined) page.exception = options.exception;
  if (response?.truncated === true) page.body_truncated = true;
  if (response?.cut !== undefined) {
    page.body_cut = response.cut;
    page.body_cut_bytes = response.body.length;
  }
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

/** Puts on the page the links its crawl's rules kept from being followed, by rule (**Ext** `links_skipped`), if any. */
export function putSkipped(page: PageItem, skipped: SkippedLinks): void {
  if (Object.keys(skipped).length > 0) page.links_skipped = skipped;
}

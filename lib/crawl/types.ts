/**
 * The crawler's seams: the fetcher, the page item (docs/contract.md "Pages"), and spider plugins. The crawl
 * loop (crawler.ts) only talks to these.
 */
import { CrawlClusterError } from '../errors.ts';
import type { CrawlSettings } from '../redis/frontier-types.ts';

/** One HTTP fetch. Cookies and extra headers come from the crawl request. */
export interface FetchRequest {
  url: string;
  userAgent: string;
  /** Extra request headers (CONTRACT `headers`, Ext). */
  headers?: Record<string, string>;
  /** `k=v; k2=v2` (CONTRACT `cookie`). */
  cookie?: string;
}

/** A response, body decompressed and capped; `text` is the body decoded with the detected charset. */
export interface FetchResult {
  /** The URL requested. */
  requestUrl: string;
  /** The final URL after redirects. */
  url: string;
  status: number;
  /** The reason phrase (CONTRACT: the real one, not always "OK"). */
  statusText: string;
  /** Lower-case header names → values (repeated headers keep every value). */
  headers: Record<string, string[]>;
  requestHeaders: Record<string, string[]>;
  /** Decompressed body bytes, at most the body limit. */
  body: Buffer;
  /** The body decoded to text when the content type is textual (HTML, XML, JSON, text/*), else undefined. */
  text?: string;
  /** The charset used to decode `text` (e.g. `utf-8`, `windows-1251`), or undefined for binary bodies. */
  encoding?: string;
  /** True when the body was cut at the size limit. */
  truncated: boolean;
  /** Every URL redirected through, in order (empty when none). */
  redirects: string[];
  /** Milliseconds from the request to the end of the body. */
  fetchedMs: number;
}

/** Why a fetch failed. */
export type FetchErrorKind =
  | 'timeout'
  | 'connect'
  | 'dns'
  | 'blocked_address'
  | 'too_many_redirects'
  | 'bad_url'
  | 'protocol';

/** A fetch that produced no response. `retryable` follows docs/contract.md behaviour 6. */
export class FetchError extends CrawlClusterError {
  readonly kind: FetchErrorKind;
  override readonly retryable: boolean;
  constructor(kind: FetchErrorKind, message: string, options?: ErrorOptions) {
    super(message, options);
    this.kind = kind;
    this.retryable = kind === 'timeout' || kind === 'connect' || kind === 'dns' || kind === 'protocol';
  }
}

export interface Fetcher {
  /** Fetches one URL (following redirects up to the limit, every hop checked by the SSRF guard). */
  fetch(request: FetchRequest, signal?: AbortSignal): Promise<FetchResult>;
  close(): Promise<void>;
}

/** A link found on a page. */
export interface Link {
  url: string;
  text: string;
}

/** The page message on `<p>.crawled_firehose` (docs/contract.md "Pages"). */
export interface PageItem {
  appid: string;
  crawlid: string;
  /** The spider type that handled the request. */
  spiderid: string;
  /** The URL requested. */
  url: string;
  /** The final URL after redirects (the requested URL when there was no response). */
  response_url: string;
  /** The HTTP status, or null when there was no response. */
  status_code: number | null;
  /** The real reason phrase (`''` when there was no response). */
  status_msg: string;
  /**
   * Header names as Scrapy sends them, Title-Case (`Content-Type`, `X-Request-Id`, `Etag`: Python's
   * `str.title()`), to every value (repeated headers keep every value); `{}` when there was no response.
   */
  response_headers: Record<string, string[]>;
  /** The headers sent, named like {@link PageItem.response_headers}. */
  request_headers: Record<string, string[]>;
  /**
   * The decoded text, or base64 of the response bytes when {@link PageItem.body_encoding} says so (a binary
   * response, or `KAFKA_BASE_64_ENCODE`); `''` when there was no response.
   */
  body: string;
  /**
   * The charset the response is in, always a codec name Python knows (clients call `body.decode(encoding)`):
   * `utf-8`, `windows-1252`, `cp874`... Null for a binary response and when there was no response.
   */
  encoding: string | null;
  /** **Ext**: `base64` when `body` is base64 of the response bytes; absent when `body` is the text itself. */
  body_encoding?: 'base64';
  links: Link[];
  /** The crawl request's `attrs`, or null when it had none (as Scrapy Cluster sends `None`). */
  attrs: Record<string, unknown> | null;
  success: boolean;
  /** UTC, `YYYY-MM-DDTHH:mm:ss.SSS`. */
  timestamp: string;
  /** Why the request failed for good (`success: false`). */
  exception?: string;
  /** **Ext**: the request's depth. */
  depth?: number;
  /** **Ext**: milliseconds from the request to the end of the body (0 without a response). */
  fetched_ms?: number;
  /** **Ext**: how many times the request was retried before this outcome. */
  retry_times?: number;
  /** **Ext**: where the whole body is in the body store, when it was too big for the message. */
  body_ref?: string;
  /** **Ext**: the body was cut (at the fetcher's size limit, or to fit the message limit). */
  body_truncated?: boolean;
  /** **Ext**: only the first links fit the message limit (the rest were still followed). */
  links_truncated?: boolean;
  /** **Ext**: `attrs` did not fit the message limit and is sent as `{}` (only when the request had attrs). */
  attrs_truncated?: boolean;
  /** **Ext**: why link extraction stopped early (a link cap or the time budget), when it did. */
  links_stopped?: string;
}

/** What a spider sees of the request it handles. */
export interface SpiderRequest {
  url: string;
  depth: number;
  priority: number;
  retries: number;
  crawl: CrawlSettings;
}

/** A request a spider wants crawled next; `spider` hands it to another spider type. */
export interface FollowRequest {
  url: string;
  /** @default the same spider type */
  spider?: string;
}

/** A spider plugin: maps a response to links to follow. The page item itself is built by the crawler. */
export interface Spider {
  readonly name: string;
  /**
   * Chooses what to follow from a page's links (already filtered by the crawl's rules and depth).
   * @param links the page's links that pass the crawl's filters
   */
  follow(request: SpiderRequest, response: FetchResult, links: Link[]): FollowRequest[];
  /**
   * The spider bounds its own walk, so the crawl's `maxdepth` does not stop it (Scrapy Cluster's wandering
   * spider: one link per page until a page has none, here at most a fixed number of steps).
   * @default false
   */
  readonly boundsItself?: boolean;
  /**
   * The page's `attrs` for this request, when the spider sends more than the crawl's (the wandering spider's
   * `step`). @default the crawl's attrs
   */
  attrs?(request: SpiderRequest): Record<string, unknown>;
}

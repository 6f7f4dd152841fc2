/**
 * The crawler's seams: the fetcher, the page item (docs/contract.md "Pages"), and spider plugins. The crawl
 * loop (crawler.ts) only talks to these.
 */

import type { CheerioAPI } from 'cheerio/slim';
import { CrawlClusterError } from '../errors.ts';
import type { CrawlSettings } from '../frontier-model.ts';

/** One HTTP fetch. Cookies and extra headers come from the crawl request. */
export interface FetchRequest {
  url: string;
  userAgent: string;
  /** Extra request headers (CONTRACT `headers`, Ext). */
  headers?: Record<string, string>;
  /** `k=v; k2=v2` (CONTRACT `cookie`). */
  cookie?: string;
  /**
   * The crawl the request belongs to (`appid/crawlid`): the browser fetcher renders each crawl's pages in a context
   * of its own (lib/crawl/browser/pool.ts). @default none
   */
  crawl?: string;
  /**
   * The body keeps its share of the process's body budget (lib/crawl/fetch/body-budget.ts) after the fetch, until the
   * result's {@link FetchResult.release} is called: the crawler's pages hold their bodies until their message is built.
   * Without it the share is given back as soon as the body is read. @default false
   */
  holdBody?: boolean;
  /**
   * Redirects followed for this request, in place of the fetcher's own limit (robots.txt asks for the five
   * RFC 9309 §2.3.1.2 requires, whatever `MAX_REDIRECTS` says).
   * @default the fetcher's `maxRedirects`
   */
  maxRedirects?: number;
  /**
   * The proxy group the request goes through (its crawl's `attrs.proxy`, docs/proxies.md): a group of
   * CRAWLER_PROXY_GROUPS, or `none` for a direct fetch.
   * @default CRAWLER_PROXIES (direct when that is empty)
   */
  proxy?: string;
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
  /** True when the body was cut ({@link FetchResult.cut} says why). */
  truncated: boolean;
  /**
   * Why the body was cut: at the fetcher's size limit (`max_body_bytes`), or because the process's budget of bodies in
   * flight was full (`memory_budget`); absent when the body is whole.
   */
  cut?: 'max_body_bytes' | 'memory_budget';
  /**
   * Gives the body's share of the body budget back (idempotent); present when the request asked to
   * {@link FetchRequest.holdBody} and the fetcher has a budget.
   */
  release?: () => void;
  /** Every URL redirected through, in order (empty when none). */
  redirects: string[];
  /** Milliseconds from the request to the end of the body. */
  fetchedMs: number;
}

/**
 * Why a fetch failed. `protocol` is a response that broke off or failed in a way that may not happen again;
 * `bad_response` is one that is malformed the same way every time (headers over the size limit, bytes the HTTP
 * parser refuses, a body that does not decode), so fetching it again cannot help.
 */
export type FetchErrorKind =
  | 'timeout'
  | 'connect'
  | 'dns'
  | 'blocked_address'
  | 'too_many_redirects'
  | 'bad_url'
  | 'protocol'
  | 'bad_response'
  /** A forward proxy (CRAWLER_PROXIES) refused our credentials (407): every proxy tried did. Not retried. */
  | 'proxy_auth'
  /** A forward proxy could not be reached, or dropped the connection before the target answered. */
  | 'proxy_connect'
  /** A forward proxy answered the tunnel request with an error of its own (5xx), not one of the target. */
  | 'proxy_error'
  /** The request names a proxy group (`attrs.proxy`) this crawler does not have in CRAWLER_PROXY_GROUPS. */
  | 'proxy_group';

/** A fetch that produced no response. `retryable` follows docs/contract.md behaviour 6. */
export class FetchError extends CrawlClusterError {
  readonly kind: FetchErrorKind;
  override readonly retryable: boolean;
  constructor(kind: FetchErrorKind, message: string, options?: ErrorOptions) {
    super(message, options);
    this.kind = kind;
    this.retryable =
      kind === 'timeout' ||
      kind === 'connect' ||
      kind === 'dns' ||
      kind === 'protocol' ||
      kind === 'proxy_connect' ||
      kind === 'proxy_error' ||
      // Another crawler of the fleet may have the group (a deploy that adds one reaches the tasks one at a time).
      kind === 'proxy_group';
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
   * The charset the response is in, always a codec name Python knows that decodes the body's bytes (clients call
   * `body.decode(encoding)`): `utf-8`, `windows-1252`, `cp874`...; `latin-1` for a binary response (one character
   * per byte), `utf-8` when there was no response (an empty body).
   */
  encoding: string;
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
  /**
   * **Ext**: `body` is not the whole response body: the fetcher cut it ({@link PageItem.body_cut}), or the message
   * carries only its first part ({@link PageItem.body_message_cut}). Either or both.
   */
  body_truncated?: boolean;
  /**
   * **Ext**: why the fetcher stopped reading the response's body: `max_body_bytes` (its decoded bytes reached
   * `MAX_BODY_BYTES`) or `memory_budget` (the process's budget of bodies in flight was full). What the message and the
   * body store hold is then the first {@link PageItem.body_cut_bytes} decoded bytes of it.
   */
  body_cut?: 'max_body_bytes' | 'memory_budget';
  /** **Ext**: with {@link PageItem.body_cut}, the decoded bytes kept. */
  body_cut_bytes?: number;
  /**
   * **Ext**: the message carries only the first part of the body to fit `KAFKA_MAX_MESSAGE_BYTES`; the body as
   * fetched is at {@link PageItem.body_ref} when a body store is set.
   */
  body_message_cut?: boolean;
  /** **Ext**: only the first links fit the message limit (the rest were still followed). */
  links_truncated?: boolean;
  /** **Ext**: `attrs` did not fit the message limit and is sent as `{}` (only when the request had attrs). */
  attrs_truncated?: boolean;
  /** **Ext**: why link extraction stopped early (a link cap or the time budget), when it did. */
  links_stopped?: string;
  /**
   * **Ext**: how many of the page's links the crawl's rules kept from being followed, by the request field whose rule
   * did (`allowed_domains`, `allow_regex`, `deny_regex`, `deny_extensions`); absent when none were.
   */
  links_skipped?: Partial<Record<'allowed_domains' | 'allow_regex' | 'deny_regex' | 'deny_extensions', number>>;
  /**
   * **Ext**: what the page's spider extracted ({@link SpiderResult.data}), when it returned any. At most
   * {@link MAX_DATA_BYTES} as JSON, and cut to `null` (with `data_truncated`) when the message would not fit.
   */
  data?: unknown;
  /** **Ext**: `data` was too big (or not JSON) and is sent as `null`. */
  data_truncated?: boolean;
}

/**
 * What a spider sees of the request it handles. Every field is the same on whichever crawler of the fleet
 * leases the request: it comes from the frontier (the queued request and its crawl's settings), never from
 * the process that queued it.
 */
export interface SpiderRequest {
  /** The URL requested (without the frontier's own `#cc-attrs=` fragment, see {@link FollowRequest.attrs}). */
  url: string;
  /** Hops from the seed (the seed 0, each child its page's depth + 1). */
  depth: number;
  /** The request's priority: the seed's, then what each parent gave its child (@default parent - 10). */
  priority: number;
  /** Times this request was retried before this attempt (0 on the first). */
  retries: number;
  /** The crawl's settings, stored once per crawl and per spider type (docs/design.md §3 "Compact"). */
  crawl: CrawlSettings;
  /**
   * The request's attrs: the crawl's `attrs` with those the parent's {@link FollowRequest.attrs} set on top, or
   * undefined when neither has any. It is what the page message echoes in `attrs`.
   */
  attrs?: Record<string, unknown>;
  /** The spider type whose queue the request came from (the crawl's `spiderid`, or a hand-off's type). */
  spider?: string;
}

/**
 * What a spider wants crawled next. Each entry becomes one queued request of the same crawl, subject to the
 * crawl's `allowed_domains` and to its `maxdepth` (unless the spider {@link Spider.boundsItself}).
 */
export interface FollowRequest {
  /** An absolute http(s) URL of at most 2048 characters (longer or invalid ones are dropped). */
  url: string;
  /**
   * Hands the request to another spider type: it is queued in that type's frontier and leased by the crawlers
   * that serve it (the crawl is registered under that type on its first hand-off, with the same settings; it
   * then has its own dupefilter, counters and `complete` notice, with that `spiderid`).
   * @default the spider type of the page
   */
  spider?: string;
  /**
   * The child's priority, higher first (clamped to -2000..1000, what the frontier encodes).
   * @default the page's priority - 10 (docs/contract.md behaviour 3)
   */
  priority?: number;
  /**
   * Attrs of this request only, set on top of the page's (so they pass on to its own children). They ride with
   * the queued URL, so they cost Redis memory per queued request: at most {@link MAX_FOLLOW_ATTRS_BYTES} as JSON
   * (larger ones are dropped with the entry and a log line).
   * @default none: the child has the page's attrs
   */
  attrs?: Record<string, unknown>;
  /**
   * Queue it even when the crawl has seen the URL (Scrapy's `dont_filter`). It is still queued at most once per
   * page that asks for it, so a page processed twice does not queue it twice, and a loop of pages that ask for
   * each other ends once each has asked.
   * @default false
   */
  dont_filter?: boolean;
}

/** The most bytes of JSON a {@link FollowRequest.attrs} may take. */
export const MAX_FOLLOW_ATTRS_BYTES = 1024;

/** Everything a spider gets for one page. Built per page by the crawler; nothing in it outlives the call. */
export interface SpiderContext {
  request: SpiderRequest;
  /**
   * The response: status, reason, lower-case headers, the body bytes and its decoded `text` (textual content
   * types only), the final `url` after redirects. Retryable statuses never reach a spider (they are retried).
   */
  response: FetchResult;
  /** The page's links (`<a>`, `<area>`, HTML only) that pass the crawl's filters, in document order. */
  links: Link[];
  /**
   * The page as a cheerio document (`cheerio/slim`, htmlparser2), built on the first call and then cached. Only
   * spiders that call it pay for the DOM; the link path never builds one. `undefined`-safe: an empty document
   * when the response has no text.
   */
  $(): CheerioAPI;
}

/** What a spider makes of a page. */
export interface SpiderResult {
  /**
   * JSON for the page message's `data` field (**Ext**, docs/contract.md "Pages"): whatever the spider extracted.
   * At most {@link MAX_DATA_BYTES} as JSON; a larger value is sent as `null` with `data_truncated: true`, as is a
   * value that is not JSON (a function, a cycle, a BigInt).
   */
  data?: unknown;
  /** Requests to crawl next. @default none */
  follow?: FollowRequest[];
}

/** The largest `data` a page carries, as JSON bytes: a quarter of the default page message limit. */
export const MAX_DATA_BYTES = 256 * 1024;

/** What {@link Spider.open} gets. */
export interface SpiderOpenContext {
  /** The crawler's log. */
  log: {
    info(message: string, fields?: Record<string, unknown>): void;
    warn(message: string, fields?: Record<string, unknown>): void;
  };
}

/**
 * A spider plugin (docs/spiders.md): maps a response to data and requests to follow; the page message
 * itself is built by the crawler. Built-in spiders (lib/crawl/spiders) and plugins (`CRAWLER_PLUGINS`) are the
 * same thing, registered the same way (lib/crawl/spiders/registry.ts).
 *
 * Across workers: a spider object lives in every crawler process that serves its type, and any of them may handle
 * any request of that type; keep no state between pages that another process would need (put it in `attrs`).
 */
export interface Spider {
  /** The spider type, as requests name it in `spiderid`: 1–40 of `A-Za-z0-9._-`, unique in the fleet. */
  readonly name: string;
  /**
   * Handles one fetched page (a success: 2xx–4xx other than the retried statuses). It may be async. A throw (or a
   * rejected promise) gives the request a `success:false` page with the error in `exception`, and the crawler goes
   * on with its next request (lib/crawl/failure.ts: poison, never retried).
   */
  parse(context: SpiderContext): SpiderResult | Promise<SpiderResult>;
  /**
   * Called once when the crawler process starts, before it leases anything; a throw stops the process at start
   * with the spider's name and the reason (as a broken plugin module does). @default nothing
   */
  open?(context: SpiderOpenContext): void | Promise<void>;
  /** Called once when the crawler process stops, after the last page; a throw is logged. @default nothing */
  close?(): void | Promise<void>;
  /**
   * The spider bounds its own walk, so the crawl's `maxdepth` does not stop its follow entries (Scrapy
   * Cluster's wandering spider: one link per page until a page has none, here at most a fixed number of steps).
   * @default false
   */
  readonly boundsItself?: boolean;
  /**
   * Whether the spider uses the page's links for this request. False: the crawler does not extract them (the spider
   * gets `links: []`) and the page message carries `links: []`, as Scrapy Cluster's link spider sends a page it
   * does not spider (one at the crawl's `maxdepth`). Extraction is most of a page's parsing, and in a crawl bounded
   * by depth most pages are at the last depth. @default true
   */
  wantsLinks?(request: SpiderRequest): boolean;
  /**
   * The page's `attrs` for this request, when the spider sends more than the request's (the wandering
   * spider's `step`). @default the request's attrs
   */
  attrs?(request: SpiderRequest): Record<string, unknown>;
}

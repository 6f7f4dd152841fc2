/**
 * The production {@link Fetcher} (docs/design.md §5): undici over one keep-alive {@link Agent} (a pool per
 * origin), redirects followed here so every hop passes the SSRF guard, bodies decompressed with
 * node:zlib streams and capped on decoded bytes, text decoded with the detected charset.
 *
 * Failures with no response become {@link FetchError}s whose `kind` decides retries (docs/contract.md
 * behaviour 6), and a response malformed the same way every time is one (`bad_response`, not retried); any HTTP
 * response, 4xx/5xx included (a 503 with Retry-After too), is a result: the crawler decides what a status means.
 *
 * This holds the agent and the redirect loop; lib/crawl/fetch/http.ts the headers and redirect targets, lib/crawl/fetch/body.ts the
 * body reading and its limits, lib/crawl/fetch/errors.ts what a failure was.
 */
import { STATUS_CODES } from 'node:http';
import { Agent, type Dispatcher } from 'undici';
import { DIRECT_PROXY_GROUP } from '../../schemas/index.ts';
import { FetchError, type Fetcher, type FetchRequest, type FetchResult } from '../types.ts';
import { connectionReleased, contentCodings, isTextual, readBody } from './body.ts';
import { BODY_BYTE_COST, type BodyBudget, type BodyHold } from './body-budget.ts';
import { decodeBody, detectCharset } from './charset.ts';
import { toFetchError } from './errors.ts';
import {
  CREDENTIAL_HEADERS,
  firstHeader,
  parseHttpUrl,
  REDIRECT_BODY_DUMP_BYTES,
  REDIRECT_STATUSES,
  redirectTarget,
  requestHeaders,
  responseHeaders,
} from './http.ts';
import type { ProxyEndpoint } from './proxy-pool.ts';
import { type ProxyOutcomeListener, ProxyRoute } from './proxy-route.ts';
import { assertAllowedHost, guardedLookup, type HostMap } from './ssrf.ts';

/** Sent when a request carries no user agent of its own. */
const DEFAULT_USER_AGENT = 'crawl-cluster/0.1 (+https://github.com/istresearch/scrapy-cluster)';

/** Options of {@link UndiciFetcher}. */
export interface UndiciFetcherOptions {
  /**
   * `User-Agent` for requests whose `userAgent` is empty.
   * @default DEFAULT_USER_AGENT
   */
  userAgent?: string;
  /**
   * Limit on establishing a connection (TCP and TLS), per hop.
   * @default 10000
   */
  connectTimeoutMs?: number;
  /**
   * Limit from sending a request to receiving the complete response headers, per hop.
   * @default 10000
   */
  headersTimeoutMs?: number;
  /**
   * Longest silence between two body chunks (an idle limit, not a total).
   * @default 10000
   */
  bodyTimeoutMs?: number;
  /**
   * Deadline of a whole fetch, redirects and body included, so a server that drips a byte just
   * inside `bodyTimeoutMs` cannot hold a crawler slot forever; kept well under the lease timeout.
   * @default 60000
   */
  totalTimeoutMs?: number;
  /**
   * The process's budget for bodies in flight (lib/crawl/fetch/body-budget.ts): a fetch starts only while it has room, and
   * a body is read only as far as there is room (cut with `memory_budget` when nothing would ever give room back).
   * @default none
   */
  bodyBudget?: BodyBudget;
  /**
   * Largest body kept, counted on decoded (decompressed) bytes, so a compression bomb is cut too. Reading
   * stops there and the result says `truncated: true`, `cut: 'max_body_bytes'`.
   * @default 10485760 (10 MiB)
   */
  maxBodyBytes?: number;
  /**
   * Redirects followed before failing with `too_many_redirects` (0: a redirect is an error).
   * @default 5
   */
  maxRedirects?: number;
  /**
   * Allow loopback, private, link-local and other non-public addresses (local runs and tests).
   * @default false
   */
  allowPrivateNetworks?: boolean;
  /**
   * Host name → IP overrides consulted before DNS (tests, the bench fixture site); the resolved address
   * is still checked by the SSRF guard. See {@link guardedLookup}.
   * @default {}
   */
  resolve?: HostMap;
  /**
   * Host names of `resolve` whose mapped address passes the SSRF guard even when it is not public (tests: a fixture
   * site on loopback, crawled with private networks refused, so every other private address still is).
   * @default none
   */
  trustedHosts?: readonly string[];
  /**
   * Most concurrent connections to one origin.
   * @default 16
   */
  connectionsPerOrigin?: number;
  /**
   * Verify TLS certificates. Scrapy did not; off means a page behind a broken certificate is still
   * crawled, at the price of trusting whatever answers.
   * @default true
   */
  verifyTls?: boolean;
  /**
   * Forward proxies every fetch goes through (CRAWLER_PROXIES, lib/crawl/fetch/proxy-route.ts); none: direct.
   * @default none
   */
  proxies?: readonly ProxyEndpoint[];
  /**
   * Named groups of forward proxies (CRAWLER_PROXY_GROUPS) a request chooses with {@link FetchRequest.proxy}.
   * @default none
   */
  proxyGroups?: ReadonlyMap<string, readonly ProxyEndpoint[]>;
  /**
   * How long a domain keeps its proxy, and how long a proxy that failed repeatedly rests.
   * @default { sessionMs: 600000, restMs: 60000 }
   */
  proxySessions?: { sessionMs?: number; restMs?: number };
  /**
   * Told each request's outcome per proxy (the crawler counts them: `proxy:<name>:<outcome>`).
   * @default none
   */
  onProxyOutcome?: ProxyOutcomeListener;
}

/**
 * {@link Fetcher} on undici. One instance per process: it owns the connection pools, and {@link close}
 * ends them. Always `GET`; request headers are the defaults (`user-agent`, `accept`, `accept-language`,
 * `accept-encoding`), then the request's `headers` (except connection-management ones), then its
 * `cookie`. `redirects` lists the URLs that answered with a redirect, in order (Scrapy's
 * `redirect_urls`); `requestHeaders` are those of the last hop, including `host` and `connection`.
 *
 * Aborting `signal` rejects with the signal's reason, not a {@link FetchError}: the caller stopped the
 * fetch, the target did not fail.
 */
export class UndiciFetcher implements Fetcher {
  readonly #agent: Agent;
  readonly #userAgent: string;
  readonly #totalTimeoutMs: number;
  readonly #maxBodyBytes: number;
  readonly #maxRedirects: number;
  readonly #allowPrivate: boolean;
  readonly #budget: BodyBudget | undefined;
  /** Set only when proxies are configured: without them a hop goes straight to {@link #agent}. */
  readonly #proxies: ProxyRoute | undefined;
  /** One route per proxy group, each with its own sessions and health. */
  readonly #groups = new Map<string, ProxyRoute>();

  constructor(options: UndiciFetcherOptions = {}) {
    this.#userAgent = options.userAgent ?? DEFAULT_USER_AGENT;
    this.#totalTimeoutMs = options.totalTimeoutMs ?? 60_000;
    this.#maxBodyBytes = options.maxBodyBytes ?? 10 * 1024 * 1024;
    this.#maxRedirects = options.maxRedirects ?? 5;
    this.#allowPrivate = options.allowPrivateNetworks ?? false;
    this.#budget = options.bodyBudget;
    const lookup = guardedLookup(this.#allowPrivate, options.resolve ?? {}, undefined, options.trustedHosts);
    const connections = options.connectionsPerOrigin ?? 16;
    const headersTimeoutMs = options.headersTimeoutMs ?? 10_000;
    const bodyTimeoutMs = options.bodyTimeoutMs ?? 10_000;
    const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
    const verifyTls = options.verifyTls ?? true;
    this.#agent = new Agent({
      connections,
      headersTimeout: headersTimeoutMs,
      bodyTimeout: bodyTimeoutMs,
      // HTTP/1.1 only: HTTP/2 has no reason phrases (CONTRACT `status_msg`), and per-domain throttling
      // leaves nothing for multiplexing to win.
      allowH2: false,
      connect: { timeout: connectTimeoutMs, lookup, rejectUnauthorized: verifyTls },
    });
    const route = (proxies: readonly ProxyEndpoint[]) =>
      new ProxyRoute({
        proxies,
        pool: options.proxySessions,
        allowPrivate: this.#allowPrivate,
        lookup,
        connections,
        headersTimeoutMs,
        bodyTimeoutMs,
        connectTimeoutMs,
        verifyTls,
        onOutcome: options.onProxyOutcome,
      });
    this.#proxies = options.proxies && options.proxies.length > 0 ? route(options.proxies) : undefined;
    for (const [group, proxies] of options.proxyGroups ?? []) this.#groups.set(group, route(proxies));
  }

  async fetch(request: FetchRequest, signal?: AbortSignal): Promise<FetchResult> {
    const started = performance.now();
    if (signal?.aborted) throw signal.reason;
    // Bodies being read fill the process's budget: this fetch starts (and its time counts) once there is room.
    if (this.#budget) await this.#budget.admit(signal);
    // One controller aborted by the deadline or by the caller's signal (forwarded by hand: AbortSignal.any costs a
    // weak reference per fetch and more work for the GC).
    const abort = new AbortController();
    const timer = setTimeout(
      () => abort.abort(new FetchError('timeout', `no complete response within ${this.#totalTimeoutMs} ms`)),
      this.#totalTimeoutMs,
    );
    const forward = () => abort.abort(signal?.reason);
    signal?.addEventListener('abort', forward, { once: true });
    try {
      return await this.#fetch(request, abort.signal, started);
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (abort.signal.aborted) throw abort.signal.reason;
      throw toFetchError(error);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', forward);
    }
  }

  async close(): Promise<void> {
    await Promise.all([
      this.#agent.close(),
      this.#proxies?.close(),
      ...[...this.#groups.values()].map((r) => r.close()),
    ]);
  }

  /** The route of a request's {@link FetchRequest.proxy}: undefined for a direct fetch. */
  #route(group: string | undefined): ProxyRoute | undefined {
    if (group === undefined) return this.#proxies;
    if (group === DIRECT_PROXY_GROUP) return undefined;
    const route = this.#groups.get(group);
    if (route !== undefined) return route;
    const known = this.#groups.size > 0 ? `it has ${[...this.#groups.keys()].join(', ')}` : 'it has none';
    throw new FetchError(
      'proxy_group',
      `this crawler has no proxy group ${JSON.stringify(group).slice(0, 100)} (CRAWLER_PROXY_GROUPS: ${known})`,
    );
  }

  async #fetch(request: FetchRequest, signal: AbortSignal, started: number): Promise<FetchResult> {
    const firstUrl = parseHttpUrl(request.url);
    const baseHeaders = requestHeaders(request, this.#userAgent);
    const redirects: string[] = [];
    const visited = new Set([firstUrl.href]);
    const maxRedirects = request.maxRedirects ?? this.#maxRedirects;
    const proxies = this.#route(request.proxy);
    let url = firstUrl;
    for (;;) {
      assertAllowedHost(url, this.#allowPrivate);
      const headers = { ...baseHeaders };
      if (url.origin !== firstUrl.origin) for (const name of CREDENTIAL_HEADERS) delete headers[name];
      const hop: Dispatcher.RequestOptions = {
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: 'GET',
        headers,
        signal,
      };
      const response = proxies ? await proxies.request(url, hop) : await this.#agent.request(hop);
      const target = REDIRECT_STATUSES.has(response.statusCode)
        ? redirectTarget(firstHeader(response.headers.location), url)
        : undefined;
      if (target === undefined) return this.#result(request, url, headers, response, redirects, signal, started);

      // Unread redirect bodies would pin the connection; small ones are drained so it can be reused.
      await response.body.dump({ limit: REDIRECT_BODY_DUMP_BYTES }).catch(() => undefined);
      await connectionReleased();
      redirects.push(url.href);
      if (redirects.length > maxRedirects)
        throw new FetchError('too_many_redirects', `more than ${maxRedirects} redirects from ${request.url}`);
      if (visited.has(target.href))
        throw new FetchError('too_many_redirects', `redirect loop: ${url.href} → ${target.href}`);
      visited.add(target.href);
      url = target;
    }
  }

  async #result(
    request: FetchRequest,
    url: URL,
    sent: Record<string, string>,
    response: Dispatcher.ResponseData,
    redirects: string[],
    signal: AbortSignal,
    started: number,
  ): Promise<FetchResult> {
    const headers = responseHeaders(response.headers);
    const codings = contentCodings(firstHeader(response.headers['content-encoding']));
    const budget = this.#budget;
    const hold = budget?.open();
    let read: Awaited<ReturnType<typeof readBody>>;
    try {
      read = await readBody(
        response.body,
        codings,
        this.#maxBodyBytes,
        signal,
        budget && hold && ((n) => roomFor(budget, hold, n, signal)),
      );
    } catch (error) {
      if (hold) budget?.release(hold);
      throw error;
    }
    if (hold) budget?.done(hold);
    const { body, cut, decoded } = read;
    const contentType = firstHeader(response.headers['content-type']);
    const result: FetchResult = {
      requestUrl: request.url,
      url: url.href,
      status: response.statusCode,
      statusText: response.statusText || STATUS_CODES[response.statusCode] || '',
      headers,
      requestHeaders: {
        host: [url.host],
        connection: ['keep-alive'],
        ...Object.fromEntries(Object.entries(sent).map(([k, v]) => [k, [v]])),
      },
      body,
      truncated: cut !== undefined,
      redirects,
      fetchedMs: Math.round(performance.now() - started),
    };
    if (cut !== undefined) result.cut = cut;
    if (decoded && isTextual(contentType, body)) {
      result.encoding = detectCharset(contentType, body);
      result.text = decodeBody(body, result.encoding);
    }
    if (hold && budget) {
      if (request.holdBody) result.release = () => budget.release(hold);
      else budget.release(hold);
    }
    return result;
  }
}

/**
 * Room in the budget for `n` more decoded bytes of a body (each costing {@link BODY_BYTE_COST}). A body that was
 * still waiting for room when the fetch's own deadline passed is cut there (false), not failed as a timeout: the
 * server was not slow, the process was full.
 */
async function roomFor(budget: BodyBudget, hold: BodyHold, n: number, signal: AbortSignal): Promise<boolean> {
  try {
    return await budget.take(hold, n * BODY_BYTE_COST, signal);
  } catch (error) {
    if (error instanceof FetchError && error.kind === 'timeout' && signal.reason === error) return false;
    throw error;
  }
}

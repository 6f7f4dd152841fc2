/**
 * The production {@link Fetcher} (docs/design.md §5): undici over one keep-alive {@link Agent} (a pool per
 * origin), redirects followed here so every hop passes the SSRF guard, bodies decompressed with
 * node:zlib streams and capped on decoded bytes, text decoded with the detected charset.
 *
 * Failures with no response become {@link FetchError}s whose `kind` decides retries (docs/contract.md
 * behaviour 6), and a response malformed the same way every time is one (`bad_response`, not retried); any HTTP
 * response, 4xx/5xx included (a 503 with Retry-After too), is a result: the crawler decides what a status means.
 */
import { maxHeaderSize, STATUS_CODES } from 'node:http';
import { pipeline, type Readable, type Transform } from 'node:stream';
import { setImmediate } from 'node:timers/promises';
import {
  createBrotliDecompress,
  createGunzip,
  createInflate,
  createInflateRaw,
  constants as zlibConstants,
} from 'node:zlib';
import { Agent, type Dispatcher } from 'undici';
import { decodeBody, detectCharset } from './charset.ts';
import { assertAllowedHost, guardedLookup, type HostMap } from './ssrf.ts';
import { FetchError, type Fetcher, type FetchRequest, type FetchResult } from './types.ts';

/** Sent when a request carries no user agent of its own. */
export const DEFAULT_USER_AGENT = 'crawl-cluster/0.1 (+https://github.com/istresearch/scrapy-cluster)';
/** Scrapy's default `Accept`, so pages answer the crawler as they answered Scrapy Cluster. */
const ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
const ACCEPT_ENCODING = 'gzip, deflate, br';
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
/** A redirect's own body is read (so the connection can be reused) up to this much, else the socket is dropped. */
const REDIRECT_BODY_DUMP_BYTES = 64 * 1024;
/** Connection management belongs to the client; a request header cannot override it. */
const MANAGED_HEADERS = new Set([
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'content-length',
  'expect',
]);
/** Credentials that must not follow a redirect to another origin (browsers and Scrapy drop them too). */
const CREDENTIAL_HEADERS = ['cookie', 'authorization', 'proxy-authorization'] as const;

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
   * Largest body kept, counted on decoded (decompressed) bytes, so a compression bomb is cut too. Reading
   * stops there and the result says `truncated: true`.
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

  constructor(options: UndiciFetcherOptions = {}) {
    this.#userAgent = options.userAgent ?? DEFAULT_USER_AGENT;
    this.#totalTimeoutMs = options.totalTimeoutMs ?? 60_000;
    this.#maxBodyBytes = options.maxBodyBytes ?? 10 * 1024 * 1024;
    this.#maxRedirects = options.maxRedirects ?? 5;
    this.#allowPrivate = options.allowPrivateNetworks ?? false;
    this.#agent = new Agent({
      connections: options.connectionsPerOrigin ?? 16,
      headersTimeout: options.headersTimeoutMs ?? 10_000,
      bodyTimeout: options.bodyTimeoutMs ?? 10_000,
      // HTTP/1.1 only: HTTP/2 has no reason phrases (CONTRACT `status_msg`), and per-domain throttling
      // leaves nothing for multiplexing to win.
      allowH2: false,
      connect: {
        timeout: options.connectTimeoutMs ?? 10_000,
        lookup: guardedLookup(this.#allowPrivate, options.resolve ?? {}),
        rejectUnauthorized: options.verifyTls ?? true,
      },
    });
  }

  async fetch(request: FetchRequest, signal?: AbortSignal): Promise<FetchResult> {
    const started = performance.now();
    if (signal?.aborted) throw signal.reason;
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
    await this.#agent.close();
  }

  async #fetch(request: FetchRequest, signal: AbortSignal, started: number): Promise<FetchResult> {
    const firstUrl = parseHttpUrl(request.url);
    const baseHeaders = this.#requestHeaders(request);
    const redirects: string[] = [];
    const visited = new Set([firstUrl.href]);
    const maxRedirects = request.maxRedirects ?? this.#maxRedirects;
    let url = firstUrl;
    for (;;) {
      assertAllowedHost(url, this.#allowPrivate);
      const headers = { ...baseHeaders };
      if (url.origin !== firstUrl.origin) for (const name of CREDENTIAL_HEADERS) delete headers[name];
      const response = await this.#agent.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: 'GET',
        headers,
        signal,
      });
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

  #requestHeaders(request: FetchRequest): Record<string, string> {
    const headers: Record<string, string> = {
      'user-agent': request.userAgent || this.#userAgent,
      accept: ACCEPT,
      'accept-language': 'en',
      'accept-encoding': ACCEPT_ENCODING,
    };
    for (const [name, value] of Object.entries(request.headers ?? {})) {
      const key = name.toLowerCase();
      if (!MANAGED_HEADERS.has(key)) headers[key] = value;
    }
    if (request.cookie) headers.cookie = headers.cookie ? `${headers.cookie}; ${request.cookie}` : request.cookie;
    return headers;
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
    const { body, truncated, decoded } = await readBody(response.body, codings, this.#maxBodyBytes, signal);
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
      truncated,
      redirects,
      fetchedMs: Math.round(performance.now() - started),
    };
    if (decoded && isTextual(contentType, body)) {
      result.encoding = detectCharset(contentType, body);
      result.text = decodeBody(body, result.encoding);
    }
    return result;
  }
}

/**
 * Waits until undici has put a connection whose response just ended back in its pool. It does that one
 * event-loop turn later (setImmediate, to see a server's late close first); a request to the same
 * origin sent before then would open a second connection instead of reusing the first.
 */
function connectionReleased(): Promise<void> {
  return setImmediate();
}

function parseHttpUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new FetchError('bad_url', `not an absolute URL: ${JSON.stringify(raw.slice(0, 200))}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new FetchError('bad_url', `not an http(s) URL: ${JSON.stringify(raw.slice(0, 200))}`);
  return url;
}

/** Where a redirect points, or undefined when it cannot be followed (no or bad Location, not http/https):
 * then the 3xx response itself is the result, as a browser would show it. */
function redirectTarget(location: string | undefined, base: URL): URL | undefined {
  if (!location) return undefined;
  try {
    const target = new URL(location, base);
    return target.protocol === 'http:' || target.protocol === 'https:' ? target : undefined;
  } catch {
    return undefined;
  }
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function responseHeaders(headers: Dispatcher.ResponseData['headers']): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out[name.toLowerCase()] = Array.isArray(value) ? value : [value];
  }
  return out;
}

type Coding = 'gzip' | 'deflate' | 'br';

/** The codings to undo, in the order the server applied them; undefined when one is not understood. */
function contentCodings(header: string | undefined): Coding[] | undefined {
  const codings: Coding[] = [];
  for (const raw of (header ?? '').split(',')) {
    const coding = raw.trim().toLowerCase();
    if (coding === '' || coding === 'identity') continue;
    if (coding === 'gzip' || coding === 'x-gzip') codings.push('gzip');
    else if (coding === 'deflate' || coding === 'br') codings.push(coding);
    else return undefined;
  }
  return codings;
}

function decompressor(coding: Coding, first: Buffer): Transform {
  // Flushing like this tolerates a body whose compressed stream lacks its final block, as browsers do.
  if (coding === 'gzip')
    return createGunzip({ flush: zlibConstants.Z_SYNC_FLUSH, finishFlush: zlibConstants.Z_SYNC_FLUSH });
  if (coding === 'br') return createBrotliDecompress();
  // "deflate" should be zlib-wrapped (RFC 9110), but some servers send raw deflate: sniff the zlib header.
  const b0 = first[0] ?? 0;
  const b1 = first[1];
  const zlibWrapped = (b0 & 0x0f) === 8 && (b1 === undefined || ((b0 << 8) | b1) % 31 === 0);
  const options = { flush: zlibConstants.Z_SYNC_FLUSH, finishFlush: zlibConstants.Z_SYNC_FLUSH };
  return zlibWrapped ? createInflate(options) : createInflateRaw(options);
}

/** Resolves with the stream's first chunk, put back so the stream still yields it (undefined: empty). */
function peek(stream: Readable): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const cleanup = () => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      cleanup();
      stream.pause();
      stream.unshift(chunk);
      resolve(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(undefined);
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    stream.on('data', onData).once('end', onEnd).once('error', onError);
  });
}

interface BodyRead {
  body: Buffer;
  truncated: boolean;
  /** False when the body is still encoded with a coding we do not undo. */
  decoded: boolean;
}

/**
 * Reads a body through its decompressors, keeping at most `maxBytes` decoded bytes: reading stops and
 * the streams are destroyed as soon as more arrives, so an endless or huge body never buffers beyond
 * the limit (plus one chunk in flight per stream).
 */
async function readBody(
  raw: Readable,
  codings: Coding[] | undefined,
  maxBytes: number,
  signal: AbortSignal,
): Promise<BodyRead> {
  let stream = raw;
  let decodeError: FetchError | undefined;
  try {
    for (const coding of [...(codings ?? [])].reverse()) {
      const first = await peek(stream);
      if (first === undefined) return { body: Buffer.alloc(0), truncated: false, decoded: true };
      const inflater = decompressor(coding, first);
      inflater.once('error', (error: Error) => {
        // Only the decompressor's own verdict on the bytes; a socket error the pipeline passes on stays what it is.
        if (!isCorruptEncoding(error)) return;
        const message = `body does not decode as ${coding}: ${error.message}${NOT_RETRIED}`;
        decodeError ??= new FetchError('bad_response', message, { cause: error });
      });
      stream = pipeline(stream, inflater, () => undefined);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let truncated = false;
    for await (const data of stream) {
      signal.throwIfAborted();
      const chunk = data as Buffer;
      const room = maxBytes - size;
      if (chunk.length > room) {
        if (room > 0) chunks.push(chunk.subarray(0, room));
        size = maxBytes;
        truncated = true;
        break;
      }
      chunks.push(chunk);
      size += chunk.length;
    }
    if (!truncated) await connectionReleased();
    return { body: Buffer.concat(chunks, size), truncated, decoded: codings !== undefined };
  } catch (error) {
    throw decodeError ?? error;
  } finally {
    // Stops the download; undici closes the connection when its body is destroyed unread.
    if (!raw.readableEnded) raw.destroy();
    if (stream !== raw) stream.destroy();
  }
}

const TEXTUAL_TYPES = new Set([
  'application/xml',
  'application/json',
  'application/javascript',
  'application/ecmascript',
  'application/x-javascript',
]);

/** HTML, XML, JSON, JavaScript and text/*; with no Content-Type, anything without NUL bytes up front. */
function isTextual(contentType: string | undefined, body: Buffer): boolean {
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  if (!type) return !body.subarray(0, 1024).includes(0) || body[0] === 0xff || body[0] === 0xfe;
  return type.startsWith('text/') || type.endsWith('+xml') || type.endsWith('+json') || TEXTUAL_TYPES.has(type);
}

const TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'ETIMEDOUT',
]);
const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME', 'EAI_NODATA', 'ENODATA', 'ESERVFAIL']);
const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EADDRNOTAVAIL',
  'EPIPE',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
]);

/** Ends a `bad_response` message, so a page's `exception` says why it was fetched once. */
const NOT_RETRIED = '; not retried, the server answers the same way every time';

/**
 * zlib and brotli errors that blame the compressed bytes (not memory or an internal state): the server sends the
 * same bytes again, so they fail again.
 */
function isCorruptEncoding(error: Error): boolean {
  const code = (error as NodeJS.ErrnoException).code ?? '';
  return code === 'Z_DATA_ERROR' || code === 'Z_NEED_DICT' || /^ERR__ERROR_(FORMAT|DICTIONARY)_/.test(code);
}

/**
 * Why the HTTP parser refused a response that is malformed the same way every time, or undefined when it did not
 * (or when the response only broke off: a connection cut mid-body may go through next time). undici 8 leaves the
 * `HPE_*` code of its HTTPParserError unset, so the class name and llhttp's reason in the message tell.
 */
function malformedResponse(error: unknown): string | undefined {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'UND_ERR_HEADERS_OVERFLOW' || code === 'HPE_HEADER_OVERFLOW')
      return `response headers larger than ${maxHeaderSize} bytes (${code})`;
    if (e.name !== 'HTTPParserError' && !code?.startsWith('HPE_')) continue;
    if (code === 'HPE_INVALID_EOF_STATE' || /\bEOF\b/.test(e.message)) return undefined;
    return `${code ? `${code}: ` : ''}${e.message}`;
  }
  return undefined;
}

function errorCode(error: unknown): string | undefined {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as NodeJS.ErrnoException).code;
    if (typeof code === 'string') return code;
    if (e instanceof AggregateError) {
      const inner = errorCode(e.errors[0]);
      if (inner) return inner;
    }
  }
  return undefined;
}

/** Maps what undici, net, dns and tls throw onto the fetch error kinds that decide retries. */
function toFetchError(error: unknown): FetchError {
  if (error instanceof FetchError) return error;
  const malformed = malformedResponse(error);
  if (malformed !== undefined) return new FetchError('bad_response', `${malformed}${NOT_RETRIED}`, { cause: error });
  const code = errorCode(error) ?? '';
  const message = error instanceof Error ? error.message : String(error);
  const options = { cause: error };
  if (TIMEOUT_CODES.has(code)) return new FetchError('timeout', `${code}: ${message}`, options);
  if (DNS_CODES.has(code)) return new FetchError('dns', `${code}: ${message}`, options);
  // TLS failures count as connection failures: a retry may reach a healthier server behind the name.
  if (CONNECT_CODES.has(code) || /^(ERR_TLS_|ERR_SSL_|CERT_|DEPTH_ZERO_|SELF_SIGNED_|UNABLE_TO_)/.test(code))
    return new FetchError('connect', `${code}: ${message}`, options);
  // Our own request could not be sent as given (e.g. a header value with a newline): retrying cannot help.
  if (code === 'UND_ERR_INVALID_ARG') return new FetchError('bad_url', `invalid request: ${message}`, options);
  return new FetchError('protocol', code ? `${code}: ${message}` : message, options);
}

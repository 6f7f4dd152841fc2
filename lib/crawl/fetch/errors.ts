/**
 * What a failed fetch was (lib/crawl/fetch/fetcher.ts): what undici, net, dns, tls and zlib throw, mapped onto the
 * {@link FetchError} kinds that decide retries (docs/contract.md behaviour 6). A response malformed the same way
 * every time (headers over the limit, bytes the HTTP parser refuses, a body that does not decode) is a
 * `bad_response`, never retried.
 */
import { maxHeaderSize } from 'node:http';
import { FetchError } from '../types.ts';

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
export const NOT_RETRIED = '; not retried, the server answers the same way every time';

/**
 * zlib and brotli errors that blame the compressed bytes (not memory or an internal state): the server sends the
 * same bytes again, so they fail again.
 */
export function isCorruptEncoding(error: Error): boolean {
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
export function toFetchError(error: unknown): FetchError {
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

/** undici's ProxyAgent rejects a tunnel that was not granted with this message (its error has no status field). */
const TUNNEL_REFUSED = /Proxy response \((\d{3})\) !== 200/;
const PROXY_CONNECT_CODES = new Set([
  ...CONNECT_CODES,
  'UND_ERR_PRX_CONN',
  'UND_ERR_PRX_TLS',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** Errors of a connection to a proxy itself, as the proxy routes saw them happen (see {@link proxySideError}). */
const PROXY_SIDE = new WeakSet<object>();

/**
 * Marks `error` as a failure of the connection to a proxy itself (reaching it, its TLS, its SOCKS5 handshake), so
 * {@link proxiedFailure} charges the proxy with it, not the site: a TLS error, say, could be either's.
 */
export function proxySideError<E extends Error>(error: E): E {
  PROXY_SIDE.add(error);
  return error;
}

/**
 * Classifies what a proxy route threw before the target's response headers arrived: a failure the proxy may be
 * behind (then the request moves to another proxy). The proxy is named by `proxy` (its name, never its URL: the URL
 * carries the credentials); the messages never quote the proxy's own. Undefined when the error is not about the proxy
 * or the tunnel (a TLS failure with the target, an abort, a site a SOCKS5 proxy could not reach): {@link toFetchError}
 * decides those.
 *
 * A tunnel refused with anything but 407 is `proxy_error`, and a proxy that drops the connection before answering is
 * `proxy_connect`, though either can mean that the proxy could not reach the site: HTTP proxies say so differently
 * (proxy-chain drops the tunnel without an answer, Squid answers 503), so the site's failure cannot be told from
 * the proxy's here. docs/proxies.md states what follows. A SOCKS5 proxy says which it was (lib/crawl/fetch/socks5.ts).
 * @param marked only errors marked {@link proxySideError} are the proxy's (a SOCKS5 route marks every one of them)
 */
export function proxiedFailure(error: unknown, proxy: string, marked = false): FetchError | undefined {
  if (error instanceof FetchError) return undefined;
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (PROXY_SIDE.has(e)) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'SOCKS5_AUTH') return new FetchError('proxy_auth', `proxy ${proxy} ${e.message} (SOCKS5)`);
      if (code === 'SOCKS5_REFUSED' || code === 'SOCKS5_PROTOCOL')
        return new FetchError('proxy_error', `proxy ${proxy}: ${e.message}`);
      return new FetchError('proxy_connect', `cannot reach proxy ${proxy} (${code ?? e.message})`);
    }
    const status = TUNNEL_REFUSED.exec(e.message)?.[1];
    if (status === undefined) continue;
    const code = Number(status);
    if (code === 407) return new FetchError('proxy_auth', `proxy ${proxy} refused the credentials (407)`);
    return new FetchError('proxy_error', `proxy ${proxy} answered the tunnel request with ${code}`);
  }
  if (marked) return undefined;
  const code = errorCode(error);
  if (code !== undefined && PROXY_CONNECT_CODES.has(code))
    return new FetchError('proxy_connect', `cannot reach proxy ${proxy} (${code})`);
  return undefined;
}

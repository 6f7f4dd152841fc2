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

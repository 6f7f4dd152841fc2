/**
 * The HTTP messages of a fetch (lib/crawl/fetch/fetcher.ts): the request headers sent (defaults, the request's own except
 * connection management, its cookie), the credentials a cross-origin redirect drops, where a redirect points, and
 * response headers as the page item carries them.
 */
import type { Dispatcher } from 'undici';
import { FetchError, type FetchRequest } from '../types.ts';

/** Scrapy's default `Accept`, so pages answer the crawler as they answered Scrapy Cluster. */
const ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
const ACCEPT_ENCODING = 'gzip, deflate, br';
/** The statuses whose `Location` is followed. */
export const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
/** A redirect's own body is read (so the connection can be reused) up to this much, else the socket is dropped. */
export const REDIRECT_BODY_DUMP_BYTES = 64 * 1024;
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
export const CREDENTIAL_HEADERS = ['cookie', 'authorization', 'proxy-authorization'] as const;

/**
 * The headers of a request: the defaults (`user-agent`, `accept`, `accept-language`, `accept-encoding`), then the
 * request's `headers` (except connection-management ones), then its `cookie`.
 */
export function requestHeaders(request: FetchRequest, defaultUserAgent: string): Record<string, string> {
  const headers: Record<string, string> = {
    'user-agent': request.userAgent || defaultUserAgent,
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

export function parseHttpUrl(raw: string): URL {
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
export function redirectTarget(location: string | undefined, base: URL): URL | undefined {
  if (!location) return undefined;
  try {
    const target = new URL(location, base);
    return target.protocol === 'http:' || target.protocol === 'https:' ? target : undefined;
  } catch {
    return undefined;
  }
}

export function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

export function responseHeaders(headers: Dispatcher.ResponseData['headers']): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out[name.toLowerCase()] = Array.isArray(value) ? value : [value];
  }
  return out;
}

/**
 * The HTTP parts of a page's request and response records: the status line and headers as received, adjusted only
 * where the bytes written are not the bytes that were on the wire, so that a WARC reader (replay, indexing) reads the
 * payload the headers describe.
 *
 * The body a page carries is the body as fetched with its `Content-Encoding` undone (docs/contract.md "Pages"), and
 * it was never chunked. So a response whose headers name a content or transfer coding gets them renamed to
 * `X-Crawl-Orig-Content-Encoding` / `X-Crawl-Orig-Transfer-Encoding` (kept, not dropped: what the server sent stays
 * readable), and `Content-Length` is the length of the payload written (the original, when it differed, kept as
 * `X-Crawl-Orig-Content-Length`). Text re-encoded as UTF-8 gets `charset=utf-8` in its `Content-Type`.
 */
import type { SinkPage } from './page-body.ts';

/** A header list in order, names as received; repeated names repeat. */
export type HeaderList = [string, string][];

/** The prefix of a header the sink renamed because the payload no longer matches it. */
const ORIG = 'X-Crawl-Orig-';

/** The one HTTP version the fetcher speaks (undici's HTTP/1.1 pools); the page message does not carry it. */
const HTTP_VERSION = 'HTTP/1.1';

/** Header values are one line each: a CR or LF in a value would end the header block early. */
function oneLine(value: string): string {
  return value.replace(/[\r\n]+/g, ' ');
}

function headerList(headers: Record<string, string[]> | undefined): HeaderList {
  const out: HeaderList = [];
  for (const [name, values] of Object.entries(headers ?? {})) {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) continue;
    for (const value of Array.isArray(values) ? values : [values]) out.push([name, oneLine(String(value))]);
  }
  return out;
}

/** How the payload written differs from what the headers describe. */
export interface PayloadFacts {
  length: number;
  reencodedFrom?: string;
}

/** The response's status line and headers, adjusted for the payload written (module comment). */
export function responseHead(page: SinkPage, payload: PayloadFacts): { statusline: string; headers: HeaderList } {
  const reason = oneLine(page.status_msg ?? '');
  const statusline = `${HTTP_VERSION} ${page.status_code}${reason ? ` ${reason}` : ''}`;
  const headers: HeaderList = [];
  let lengthSeen = false;
  for (const [name, value] of headerList(page.response_headers)) {
    const lower = name.toLowerCase();
    if (lower === 'content-encoding' || lower === 'transfer-encoding') {
      if (value.trim().toLowerCase() === 'identity') continue;
      headers.push([`${ORIG}${name}`, value]);
    } else if (lower === 'content-length') {
      if (lengthSeen) continue;
      lengthSeen = true;
      if (value.trim() !== String(payload.length)) headers.push([`${ORIG}${name}`, value]);
      headers.push([name, String(payload.length)]);
    } else if (lower === 'content-type' && payload.reencodedFrom !== undefined) {
      headers.push([`${ORIG}${name}`, value]);
      headers.push([name, withUtf8Charset(value)]);
    } else {
      headers.push([name, value]);
    }
  }
  if (!lengthSeen) headers.push(['Content-Length', String(payload.length)]);
  return { statusline, headers };
}

function withUtf8Charset(contentType: string): string {
  const bare = contentType
    .split(';')
    .filter((part) => !/^\s*charset\s*=/i.test(part))
    .join(';')
    .trim();
  return `${bare}; charset=utf-8`;
}

/**
 * The request's line and headers: `GET <path> HTTP/1.1` for the URL the response came from, the headers the page
 * says were sent, and `Host` first when they do not name it (undici sends it; the page leaves it out).
 */
export function requestHead(page: SinkPage, url: URL): { statusline: string; headers: HeaderList } {
  const headers = headerList(page.request_headers);
  if (!headers.some(([name]) => name.toLowerCase() === 'host')) headers.unshift(['Host', url.host]);
  return { statusline: `GET ${url.pathname}${url.search} ${HTTP_VERSION}`, headers };
}

/** The media type of the response (`Content-Type` without parameters), for the index. */
export function mediaType(headers: HeaderList): string | undefined {
  const value = headers.find(([name]) => name.toLowerCase() === 'content-type')?.[1];
  return value?.split(';', 1)[0]?.trim().toLowerCase() || undefined;
}

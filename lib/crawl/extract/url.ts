/**
 * The canonical form of a URL that request fingerprints hash (lib/crawl/fingerprint.ts), and the normalized
 * host that names a domain's queue (lib/crawl/domain.ts).
 *
 * Canonicalization follows Scrapy's w3lib `canonicalize_url` (keep_fragments=False), the rules Scrapy
 * Cluster's dupefilter used, with two deliberate deltas for better deduplication: dot segments are
 * resolved and default ports dropped. The vectors in `test/fixtures/url-canonicalization.json` are the
 * spec. WHATWG `URL` serializes paths and queries differently from w3lib, so only the host goes through
 * the WHATWG host parser; paths and queries are scanned here with lookup tables (this runs for every
 * extracted link).
 */
import { domainToASCII } from 'node:url';
import { CrawlClusterError } from '../../errors.ts';

/** Input that is not an absolute URL with a host; never retryable, the same input fails again. */
export class InvalidUrlError extends CrawlClusterError {
  /** The input as given (possibly very long; the message quotes at most 200 characters of it). */
  readonly url: string;
  constructor(url: string, reason: string) {
    const shown = url.length > 200 ? `${url.slice(0, 200)}…` : url;
    super(`invalid URL ${JSON.stringify(shown)}: ${reason}`);
    this.url = url;
  }
}

function charTable(chars: string): Uint8Array {
  const table = new Uint8Array(128);
  for (let i = 0; i < chars.length; i++) table[chars.charCodeAt(i)] = 1;
  return table;
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const UNRESERVED_CHARS = `${ALNUM}-._~`;
const SUB_DELIMS = "!$&'()*+,;=";
// w3lib `_path_safe_chars`: RFC 3986 reserved (without '#') + unreserved + '|' + '%'.
const PATH_SAFE = charTable(`${UNRESERVED_CHARS}:/?[]@${SUB_DELIMS}|%`);
// w3lib `_safe_chars`, used for the `;params` of the last path segment, which w3lib only quotes.
const PARAMS_SAFE = charTable(`${UNRESERVED_CHARS}:/?#[]@${SUB_DELIMS}|%`);
// What `urllib.parse.quote_plus(safe='')` leaves alone; everything else in a query is %XX (space: '+').
const QUERY_SAFE = charTable(UNRESERVED_CHARS);
const USERINFO_SAFE = charTable(`${UNRESERVED_CHARS}${SUB_DELIMS}:%`);
const SCHEME_CHARS = charTable(`${ALNUM}+-.`);
// Hosts made only of these need no IDNA or IPv4 processing beyond lower-casing (checked further below).
const PLAIN_HOST = charTable(`${ALNUM}-._`);

const HEX_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < 10; i++) HEX_VALUE[48 + i] = i;
for (let i = 0; i < 6; i++) {
  HEX_VALUE[65 + i] = 10 + i;
  HEX_VALUE[97 + i] = 10 + i;
}
const PERCENT_ENCODED: readonly string[] = Array.from(
  { length: 256 },
  (_, b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`,
);
const BYTE_CHAR: readonly string[] = Array.from({ length: 256 }, (_, b) => String.fromCharCode(b));

const TAB_OR_NEWLINE = /[\t\n\r]/;
const TAB_OR_NEWLINE_ALL = /[\t\n\r]/g;

const CHAR_PERCENT = 37;
const CHAR_PLUS = 43;
const CHAR_SLASH = 47;
const CHAR_COLON = 58;
const CHAR_SEMICOLON = 59;
const CHAR_EQUALS = 61;
const CHAR_QUESTION = 63;
const CHAR_AMPERSAND = 38;
const CHAR_HASH = 35;
const CHAR_BRACKET_OPEN = 91;

/** The value of the `%XX` escape at `i`, or -1 when `s[i..i+2]` is not one. */
function escapeAt(s: string, i: number, end: number): number {
  if (i + 2 >= end) return -1;
  const c1 = s.charCodeAt(i + 1);
  const c2 = s.charCodeAt(i + 2);
  if (c1 >= 128 || c2 >= 128) return -1;
  const h1 = HEX_VALUE[c1] as number;
  const h2 = HEX_VALUE[c2] as number;
  return h1 < 0 || h2 < 0 ? -1 : (h1 << 4) | h2;
}

/**
 * The code point at `i` (a surrogate pair read whole; a lone surrogate becomes U+FFFD, as
 * `TextEncoder` does). The caller advances by 2 when the result is above 0xFFFF.
 */
function codePointAt(s: string, i: number, end: number): number {
  const c = s.charCodeAt(i);
  if (c >= 0xd800 && c <= 0xdbff && i + 1 < end) {
    const d = s.charCodeAt(i + 1);
    if (d >= 0xdc00 && d <= 0xdfff) return ((c - 0xd800) << 10) + (d - 0xdc00) + 0x10000;
  }
  return c >= 0xd800 && c <= 0xdfff ? 0xfffd : c;
}

/** `cp` (>= 0x80) as UTF-8, each byte mapped through `bytes` (either `%XX` or the raw byte char). */
function utf8(cp: number, bytes: readonly string[]): string {
  if (cp < 0x800) return (bytes[0xc0 | (cp >> 6)] as string) + bytes[0x80 | (cp & 0x3f)];
  if (cp < 0x10000)
    return (bytes[0xe0 | (cp >> 12)] as string) + bytes[0x80 | ((cp >> 6) & 0x3f)] + bytes[0x80 | (cp & 0x3f)];
  return (
    (bytes[0xf0 | (cp >> 18)] as string) +
    bytes[0x80 | ((cp >> 12) & 0x3f)] +
    bytes[0x80 | ((cp >> 6) & 0x3f)] +
    bytes[0x80 | (cp & 0x3f)]
  );
}

/**
 * `s[start..end)` with non-ASCII as UTF-8 and every character outside `safe` percent-encoded. With
 * `normalize`, valid escapes are decoded and re-encoded (hex upper-cased, safe bytes literal), as
 * w3lib's unquote-then-quote of the path does; invalid escapes stay as they are.
 */
function encodeComponent(s: string, start: number, end: number, safe: Uint8Array, normalize: boolean): string {
  let i = start;
  // Fast path: most paths need no change at all, so return a slice without building a string.
  for (; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c >= 128 || safe[c] === 0 || (normalize && c === CHAR_PERCENT)) break;
  }
  if (i === end) return s.slice(start, end);
  let out = s.slice(start, i);
  while (i < end) {
    const c = s.charCodeAt(i);
    if (c < 128) {
      if (c === CHAR_PERCENT && normalize) {
        const b = escapeAt(s, i, end);
        if (b >= 0) {
          // %2F and %3F stay escaped (w3lib), so an encoded '/' never becomes a segment separator.
          // %25 stays escaped too: w3lib decodes it to a bare '%', which turns `%2541` into `%41`, a
          // different URL, and makes canonicalization non-idempotent.
          const literal = b < 128 && safe[b] === 1 && b !== CHAR_SLASH && b !== CHAR_QUESTION && b !== CHAR_PERCENT;
          out += literal ? BYTE_CHAR[b] : PERCENT_ENCODED[b];
          i += 3;
          continue;
        }
      }
      out += safe[c] === 1 ? BYTE_CHAR[c] : PERCENT_ENCODED[c];
      i++;
      continue;
    }
    const cp = codePointAt(s, i, end);
    out += utf8(cp, PERCENT_ENCODED);
    i += cp > 0xffff ? 2 : 1;
  }
  return out;
}

/**
 * A query name or value as the bytes w3lib sorts on, one char per byte (0-255), so `<` on these
 * strings is bytewise order: '+' is a space, valid escapes decoded, non-ASCII as UTF-8.
 */
function queryBytes(s: string, start: number, end: number): string {
  let i = start;
  for (; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c >= 128 || c === CHAR_PERCENT || c === CHAR_PLUS) break;
  }
  if (i === end) return s.slice(start, end);
  let out = s.slice(start, i);
  while (i < end) {
    const c = s.charCodeAt(i);
    if (c < 128) {
      if (c === CHAR_PERCENT) {
        const b = escapeAt(s, i, end);
        if (b >= 0) {
          out += BYTE_CHAR[b];
          i += 3;
          continue;
        }
      }
      out += c === CHAR_PLUS ? ' ' : BYTE_CHAR[c];
      i++;
      continue;
    }
    const cp = codePointAt(s, i, end);
    out += utf8(cp, BYTE_CHAR);
    i += cp > 0xffff ? 2 : 1;
  }
  return out;
}

/** `quote_plus(bytes, safe='')`: unreserved literal, space as '+', every other byte as `%XX`. */
function quotePlus(bytes: string): string {
  let i = 0;
  const n = bytes.length;
  for (; i < n; i++) {
    const c = bytes.charCodeAt(i);
    if (c >= 128 || QUERY_SAFE[c] === 0) break;
  }
  if (i === n) return bytes;
  let out = bytes.slice(0, i);
  for (; i < n; i++) {
    const c = bytes.charCodeAt(i);
    out += c < 128 && QUERY_SAFE[c] === 1 ? BYTE_CHAR[c] : c === 32 ? '+' : PERCENT_ENCODED[c];
  }
  return out;
}

type QueryPair = [name: string, value: string];

function comparePairs(a: QueryPair, b: QueryPair): number {
  if (a[0] !== b[0]) return a[0] < b[0] ? -1 : 1;
  return a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0;
}

/** The query split on '&' and ';', empty fields dropped, sorted by name then value bytes, re-encoded. */
function canonicalQuery(s: string, start: number, end: number): string {
  const pairs: QueryPair[] = [];
  let sorted = true;
  let fieldStart = start;
  for (let i = start; i <= end; i++) {
    const c = i < end ? s.charCodeAt(i) : CHAR_AMPERSAND;
    if (c !== CHAR_AMPERSAND && c !== CHAR_SEMICOLON) continue;
    if (i > fieldStart) {
      let eq = fieldStart;
      while (eq < i && s.charCodeAt(eq) !== CHAR_EQUALS) eq++;
      const pair: QueryPair = [queryBytes(s, fieldStart, eq), eq < i ? queryBytes(s, eq + 1, i) : ''];
      const last = pairs[pairs.length - 1];
      if (last !== undefined && sorted && comparePairs(last, pair) > 0) sorted = false;
      pairs.push(pair);
    }
    fieldStart = i + 1;
  }
  if (!sorted) pairs.sort(comparePairs);
  let out = '';
  for (let i = 0; i < pairs.length; i++) {
    const pair = pairs[i] as QueryPair;
    out += `${i === 0 ? '' : '&'}${quotePlus(pair[0])}=${quotePlus(pair[1])}`;
  }
  return out;
}

/** RFC 3986 remove_dot_segments on an absolute path; a trailing '.' or '..' leaves a trailing '/'. */
function removeDotSegments(path: string): string {
  const segments = path.split('/');
  const out: string[] = [];
  const last = segments.length - 1;
  for (let i = 1; i <= last; i++) {
    const segment = segments[i] as string;
    if (segment === '..') {
      out.pop();
      if (i === last) out.push('');
    } else if (segment === '.') {
      if (i === last) out.push('');
    } else {
      out.push(segment);
    }
  }
  return `/${out.join('/')}`;
}

/**
 * The host lower-cased, IDN labels as punycode, IPv4 in dotted decimal and IPv6 compressed (WHATWG host
 * parsing via `domainToASCII`), skipped for plain ASCII names, which only need lower-casing.
 */
function normalizeHost(url: string, host: string): string {
  if (host.length === 0) throw new InvalidUrlError(url, 'empty host');
  let plain = true;
  let lastLabel = 0;
  for (let i = 0; i < host.length; i++) {
    const c = host.charCodeAt(i);
    if (c >= 128 || PLAIN_HOST[c] === 0) {
      plain = false;
      break;
    }
    if (c === 46 && i < host.length - 1) lastLabel = i + 1;
  }
  if (plain) {
    const lower = host.toLowerCase();
    const first = lower.charCodeAt(lastLabel);
    // A last label that is numeric or 0x… makes WHATWG parse the host as IPv4 (`0x7f.1`); `xn--`
    // labels must be validated as punycode. Both go the slow way.
    if (!(first >= 48 && first <= 57) && !lower.includes('xn--')) return lower;
  }
  // A backslash would end the host in domainToASCII's special-scheme parsing and hide the rest.
  const ascii = host.includes('\\') ? '' : domainToASCII(host);
  if (ascii === '') throw new InvalidUrlError(url, `invalid host ${JSON.stringify(host)}`);
  return ascii;
}

/** `input` without surrounding C0 controls and spaces, and without tabs and newlines (w3lib `_strip`). */
function trimmed(input: string): string {
  let start = 0;
  let end = input.length;
  while (start < end && input.charCodeAt(start) <= 32) start++;
  while (end > start && input.charCodeAt(end - 1) <= 32) end--;
  const s = start === 0 && end === input.length ? input : input.slice(start, end);
  return TAB_OR_NEWLINE.test(s) ? s.replace(TAB_OR_NEWLINE_ALL, '') : s;
}

/** Index just past `scheme://`, or throws: only absolute URLs with an authority are accepted. */
function authorityStart(input: string, s: string): number {
  let i = 0;
  const first = s.charCodeAt(0);
  if (!((first >= 65 && first <= 90) || (first >= 97 && first <= 122)))
    throw new InvalidUrlError(input, 'missing scheme');
  while (i < s.length && s.charCodeAt(i) < 128 && SCHEME_CHARS[s.charCodeAt(i)] === 1) i++;
  if (s.charCodeAt(i) !== CHAR_COLON) throw new InvalidUrlError(input, 'missing scheme');
  if (s.charCodeAt(i + 1) !== CHAR_SLASH || s.charCodeAt(i + 2) !== CHAR_SLASH)
    throw new InvalidUrlError(input, 'missing "//" and host after the scheme');
  return i + 3;
}

/** Index of the first '/', '?' or '#' at or after `start`, else the length: where the authority ends. */
export function authorityEnd(s: string, start: number): number {
  let i = start;
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === CHAR_SLASH || c === CHAR_QUESTION || c === CHAR_HASH) break;
  }
  return i;
}

/**
 * Index where the port of `hostPort` begins (at its ':'), or its length when it has no port; throws
 * on an unterminated or trailing-garbage IPv6 literal.
 */
function portStart(input: string, hostPort: string): number {
  if (hostPort.charCodeAt(0) === CHAR_BRACKET_OPEN) {
    const close = hostPort.indexOf(']');
    if (close < 0) throw new InvalidUrlError(input, 'unterminated IPv6 address');
    if (close + 1 < hostPort.length && hostPort.charCodeAt(close + 1) !== CHAR_COLON)
      throw new InvalidUrlError(input, 'unexpected characters after IPv6 address');
    return close + 1;
  }
  const colon = hostPort.indexOf(':');
  return colon < 0 ? hostPort.length : colon;
}

/** The port digits after the ':' as a number, or -1 when empty ('example.com:' means no port). */
function parsePort(input: string, digits: string): number {
  if (digits.length === 0) return -1;
  let port = 0;
  for (let i = 0; i < digits.length; i++) {
    const c = digits.charCodeAt(i);
    if (c < 48 || c > 57) throw new InvalidUrlError(input, `invalid port ${JSON.stringify(digits)}`);
    port = port * 10 + (c - 48);
    if (port > 65535) throw new InvalidUrlError(input, `port ${digits} out of range`);
  }
  return port;
}

/**
 * The canonical form of an absolute URL: w3lib `canonicalize_url` (keep_fragments=False) plus dot
 * segments resolved and default ports dropped.
 *
 * - Surrounding C0 controls and spaces trimmed; tabs and newlines anywhere removed.
 * - Scheme and host lower-cased; IDN host as punycode; IPv4/IPv6 literals normalized; userinfo kept.
 * - Port 80 for `http` and 443 for `https` dropped, as is an empty port.
 * - Path: non-ASCII as UTF-8 `%XX`, escapes of safe characters decoded (`%7e` → `~`), other escapes
 *   upper-cased (`%2f` → `%2F`), invalid escapes (`%zz`) kept, dot segments resolved, empty path `/`.
 * - Query: split on `&` and `;`, empty fields dropped, a name without `=` gets an empty value, pairs
 *   sorted bytewise by name then value, each re-encoded `quote_plus`-style (space `+`, only
 *   `A-Za-z0-9-._~` literal); an empty query and its `?` dropped.
 * - Fragment dropped.
 *
 * @throws {InvalidUrlError} when the input has no scheme, no `//` authority, an empty or invalid host,
 *   or an invalid port.
 * @example canonicalizeUrl('http://Example.COM:80/a/../b?b=2&a=1#top') // 'http://example.com/b?a=1&b=2'
 */
export function canonicalizeUrl(input: string): string {
  const s = trimmed(input);
  const hostStart = authorityStart(input, s);
  const hostEnd = authorityEnd(s, hostStart);
  let scheme = s.slice(0, hostStart - 3);
  if (scheme !== 'http' && scheme !== 'https') scheme = scheme.toLowerCase();

  const authority = s.slice(hostStart, hostEnd);
  const at = authority.lastIndexOf('@');
  const userinfo = at < 0 ? '' : encodeComponent(authority, 0, at, USERINFO_SAFE, false);
  const hostPort = at < 0 ? authority : authority.slice(at + 1);
  const colon = portStart(input, hostPort);
  const host = normalizeHost(input, colon === hostPort.length ? hostPort : hostPort.slice(0, colon));
  const port = colon === hostPort.length ? -1 : parsePort(input, hostPort.slice(colon + 1));
  const defaultPort = scheme === 'http' ? 80 : scheme === 'https' ? 443 : -1;

  const fragment = s.indexOf('#', hostEnd);
  const end = fragment < 0 ? s.length : fragment;
  let query = s.indexOf('?', hostEnd);
  if (query >= end) query = -1;
  const pathEnd = query < 0 ? end : query;

  // urlparse splits `;params` off the last path segment only; w3lib quotes them without normalizing.
  let params = s.indexOf(';', s.lastIndexOf('/', pathEnd - 1));
  if (params < hostEnd || params >= pathEnd) params = -1;
  let path = encodeComponent(s, hostEnd, params < 0 ? pathEnd : params, PATH_SAFE, true);
  if (path.length === 0) path = '/';
  else if (path.includes('/.')) path = removeDotSegments(path);

  let out = `${scheme}://`;
  if (at >= 0) out += `${userinfo}@`;
  out += host;
  if (port >= 0 && port !== defaultPort) out += `:${port}`;
  out += path;
  if (params >= 0 && params + 1 < pathEnd) out += `;${encodeComponent(s, params + 1, pathEnd, PARAMS_SAFE, false)}`;
  if (query >= 0 && query + 1 < end) {
    const canonical = canonicalQuery(s, query + 1, end);
    if (canonical.length > 0) out += `?${canonical}`;
  }
  return out;
}

/**
 * The host of an absolute URL (`scheme://…`) or of a bare host with an optional port, normalized as in
 * {@link canonicalizeUrl} (lower case, punycode), without a trailing dot; an IPv6 literal without brackets.
 * @throws {InvalidUrlError} when there is no valid host.
 */
export function normalizedHost(urlOrHost: string): string {
  const s = trimmed(urlOrHost);
  let hostPort: string;
  if (s.includes('://')) {
    const start = authorityStart(urlOrHost, s);
    const authority = s.slice(start, authorityEnd(s, start));
    hostPort = authority.slice(authority.lastIndexOf('@') + 1);
  } else {
    hostPort = s.slice(0, authorityEnd(s, 0));
  }
  let host: string;
  if (hostPort.charCodeAt(0) !== CHAR_BRACKET_OPEN && hostPort.indexOf(':') !== hostPort.lastIndexOf(':')) {
    host = normalizeHost(urlOrHost, `[${hostPort}]`);
  } else {
    const colon = portStart(urlOrHost, hostPort);
    if (colon < hostPort.length) parsePort(urlOrHost, hostPort.slice(colon + 1));
    host = normalizeHost(urlOrHost, hostPort.slice(0, colon));
  }
  if (host.charCodeAt(0) === CHAR_BRACKET_OPEN) return host.slice(1, -1);
  if (host.charCodeAt(host.length - 1) === 46) host = host.slice(0, -1);
  if (host.length === 0) throw new InvalidUrlError(urlOrHost, 'empty host');
  return host;
}

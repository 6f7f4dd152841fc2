import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { registrableDomain } from '../../lib/crawl/domain.ts';
import { canonicalizeUrl, InvalidUrlError } from '../../lib/crawl/extract/url.ts';
import { FINGERPRINT_BYTES, requestFingerprint } from '../../lib/crawl/fingerprint.ts';
import { CrawlClusterError, failureCause } from '../../lib/errors.ts';

interface Vector {
  input: string;
  /** w3lib's output. */
  canonical: string;
  /** Ours, where resolving dot segments or dropping the default port changes w3lib's output. */
  ours?: string;
}

const { vectors } = JSON.parse(
  readFileSync(new URL('../fixtures/url-canonicalization.json', import.meta.url), 'utf8'),
) as { vectors: Vector[] };
const cases = vectors.map((v): [input: string, expected: string] => [v.input, v.ours ?? v.canonical]);

describe('canonicalizeUrl', () => {
  it('has vectors to check', () => {
    expect(cases.length).toBeGreaterThan(20);
  });

  it.each(cases)('canonicalizes %j to %j', (input, expected) => {
    expect(canonicalizeUrl(input)).toBe(expected);
  });

  it.each(cases)('leaves the canonical form of %j unchanged when canonicalized again', (_, expected) => {
    expect(canonicalizeUrl(expected)).toBe(expected);
  });

  it.each([
    ['http://example.com/a/b/..', 'http://example.com/a/'],
    ['http://example.com/a/./b/.', 'http://example.com/a/b/'],
    ['http://example.com/../../x', 'http://example.com/x'],
    ['http://example.com/%2e%2E/x/%2E', 'http://example.com/x/'],
  ])('resolves dot segments in %s to %s', (input, expected) => {
    expect(canonicalizeUrl(input)).toBe(expected);
  });

  it.each([
    ['HTTPS://Example.com:443/x', 'https://example.com/x'],
    ['http://example.com:0080/', 'http://example.com/'],
    ['http://example.com:/', 'http://example.com/'],
    ['https://example.com:80/', 'https://example.com:80/'],
  ])('drops only the scheme default port: %s becomes %s', (input, expected) => {
    expect(canonicalizeUrl(input)).toBe(expected);
  });

  it('keeps an escaped percent sign escaped so the URL keeps its meaning', () => {
    expect(canonicalizeUrl('http://example.com/a%2541?q=%2541')).toBe('http://example.com/a%2541?q=%2541');
  });

  it('drops empty query fields and gives a name without "=" an empty value', () => {
    expect(canonicalizeUrl('http://example.com/?a=1;;&&b')).toBe('http://example.com/?a=1&b=');
  });

  it('sorts query pairs by their decoded bytes, not by their encoded text', () => {
    // A space ('+') sorts before '!' (%21) as bytes, though '+' comes after '%' as text.
    expect(canonicalizeUrl('http://example.com/?k=!&k=+')).toBe('http://example.com/?k=+&k=%21');
  });

  it('encodes non-ASCII beyond the BMP as UTF-8 and a lone surrogate as U+FFFD', () => {
    expect(canonicalizeUrl('http://example.com/\u{1F600}?a=\uD800')).toBe(
      'http://example.com/%F0%9F%98%80?a=%EF%BF%BD',
    );
  });

  it('normalizes IPv4 written in hex to dotted decimal', () => {
    expect(canonicalizeUrl('http://0x7f.1/')).toBe('http://127.0.0.1/');
  });

  it.each([
    ['not a url', 'missing scheme'],
    ['http://', 'empty host'],
    ['mailto:someone@example.com', 'missing "//"'],
    ['http://exa mple.com/', 'invalid host'],
    ['http://example.com:8x/', 'invalid port'],
    ['http://example.com:70000/', 'out of range'],
    ['http://[::1/', 'unterminated IPv6'],
  ])('rejects %j with an InvalidUrlError saying %s', (input, reason) => {
    expect(() => canonicalizeUrl(input)).toThrow(InvalidUrlError);
    expect(() => canonicalizeUrl(input)).toThrow(reason);
  });

  it('raises an error that is never retried', () => {
    let error: unknown;
    try {
      canonicalizeUrl('not a url');
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(CrawlClusterError);
    expect(failureCause(error)).toBe('poison');
  });
});

describe('requestFingerprint', () => {
  const base = requestFingerprint('http://example.com/p?a=1&b=2');

  it(`is ${FINGERPRINT_BYTES} bytes, shown as 16 hex characters`, () => {
    expect(FINGERPRINT_BYTES).toBe(8);
    expect(base).toHaveLength(8);
    expect(base.toString('hex')).toMatch(/^[0-9a-f]{16}$/);
  });

  it('is the first 8 bytes of SHA-1 over method, canonical URL and body, joined by newlines', () => {
    const sha1 = (text: string) => createHash('sha1').update(text).digest('hex').slice(0, 16);
    expect(requestFingerprint('HTTP://Example.com').toString('hex')).toBe(sha1('GET\nhttp://example.com/\n'));
    expect(requestFingerprint('http://example.com/f', 'post', 'q=1').toString('hex')).toBe(
      sha1('POST\nhttp://example.com/f\nq=1'),
    );
  });

  it.each([
    ['query order', 'http://example.com/p?b=2&a=1'],
    ['a fragment', 'http://example.com/p?a=1&b=2#section'],
    ['the default port', 'http://example.com:80/p?a=1&b=2'],
    ['host case', 'http://EXAMPLE.com/p?a=1&b=2'],
    ['dot segments', 'http://example.com/x/../p?a=1&b=2'],
  ])('is the same for a URL differing only in %s', (_, url) => {
    expect(requestFingerprint(url).equals(base)).toBe(true);
  });

  it('treats the method case-insensitively and an absent body as empty', () => {
    expect(requestFingerprint('http://example.com/p?a=1&b=2', 'get', '').equals(base)).toBe(true);
  });

  it('hashes a string body as its UTF-8 bytes', () => {
    const url = 'http://example.com/form';
    expect(requestFingerprint(url, 'POST', 'q=é').equals(requestFingerprint(url, 'POST', Buffer.from('q=é')))).toBe(
      true,
    );
  });

  it.each([
    ['method', () => requestFingerprint('http://example.com/p?a=1&b=2', 'POST')],
    ['body', () => requestFingerprint('http://example.com/p?a=1&b=2', 'GET', 'x')],
    ['path', () => requestFingerprint('http://example.com/q?a=1&b=2')],
    ['query value', () => requestFingerprint('http://example.com/p?a=1&b=3')],
  ])('differs when the %s differs', (_, fingerprint) => {
    expect(fingerprint().equals(base)).toBe(false);
  });

  it('throws InvalidUrlError for a URL it cannot canonicalize', () => {
    expect(() => requestFingerprint('not a url')).toThrow(InvalidUrlError);
  });
});

describe('registrableDomain', () => {
  it.each([
    ['http://example.co.uk/', 'example.co.uk'],
    ['https://a.b.example.co.uk/x?y=1', 'example.co.uk'],
    ['http://www.example.com/', 'example.com'],
    ['http://user:pass@Shop.Example.COM:8080/', 'example.com'],
    ['a.b.example.co.uk', 'example.co.uk'],
    ['www.example.com:8443', 'example.com'],
    ['www.example.com/path?q=1', 'example.com'],
  ])('gives subdomains their registrable domain: %s is in %s', (input, expected) => {
    expect(registrableDomain(input)).toBe(expected);
  });

  it('ignores private suffixes, as Scrapy Cluster did: a blogspot.com site is in blogspot.com', () => {
    expect(registrableDomain('https://someone.blogspot.com/')).toBe('blogspot.com');
    expect(registrableDomain('https://someone.github.io/')).toBe('github.io');
  });

  it.each([
    ['http://192.168.1.10:8080/x', '192.168.1.10'],
    ['10.0.0.1', '10.0.0.1'],
    ['http://0x7f.1/', '127.0.0.1'],
  ])('makes an IPv4 literal its own domain: %s is %s', (input, expected) => {
    expect(registrableDomain(input)).toBe(expected);
  });

  it.each([
    ['http://[::1]:8080/', '::1'],
    ['http://[2001:DB8::1]/', '2001:db8::1'],
    ['[2001:db8:0:0::1]:443', '2001:db8::1'],
    ['2001:DB8::1', '2001:db8::1'],
  ])('makes an IPv6 literal its own domain, lower-case without brackets: %s is %s', (input, expected) => {
    expect(registrableDomain(input)).toBe(expected);
  });

  it.each([
    ['http://localhost:3000/', 'localhost'],
    ['LOCALHOST', 'localhost'],
    ['http://api.svc.internal/', 'api.svc.internal'],
    ['http://co.uk/', 'co.uk'],
  ])('makes a host without a public suffix below it its own domain: %s is %s', (input, expected) => {
    expect(registrableDomain(input)).toBe(expected);
  });

  it('gives an IDN host its punycode domain, the same for the Unicode and the ASCII spelling', () => {
    expect(registrableDomain('http://www.bücher.de/')).toBe('xn--bcher-kva.de');
    expect(registrableDomain('http://www.xn--bcher-kva.de/')).toBe('xn--bcher-kva.de');
  });

  it('ignores a trailing dot: example.com. is in example.com', () => {
    expect(registrableDomain('http://www.example.com./')).toBe('example.com');
    expect(registrableDomain('example.com.')).toBe('example.com');
  });

  it.each(['not a url', 'http://', 'http://exa mple.com/'])('rejects %j with an InvalidUrlError', (input) => {
    expect(() => registrableDomain(input)).toThrow(InvalidUrlError);
  });
});

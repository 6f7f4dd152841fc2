/**
 * A request's identity in the per-crawl dupefilter (docs/design.md §5: fingerprints hash the canonical URL plus
 * method and body, stored compactly).
 */
import { createHash, hash } from 'node:crypto';
import { canonicalizeUrl } from './extract/url.ts';

/** Length in bytes of a {@link requestFingerprint}. */
export const FINGERPRINT_BYTES = 8;

/**
 * The request's identity in the per-crawl dupefilter: the first {@link FINGERPRINT_BYTES} bytes of
 * SHA-1 over `METHOD + '\n' + canonicalUrl + '\n' + body`. Requests whose URLs canonicalize alike
 * (query order, fragment, default port, host case) share a fingerprint; an absent body equals an empty
 * one. Eight bytes keep the dupefilter compact: the chance of any collision among n URLs of one crawl
 * is about n²/2^65 (1 in 37 million for a million URLs), and a collision only skips one page.
 *
 * @param method HTTP method, case-insensitive. @default 'GET'
 * @param body Request body; a string is hashed as UTF-8.
 * @throws {InvalidUrlError} when `url` cannot be canonicalized.
 */
export function requestFingerprint(url: string, method = 'GET', body?: string | Uint8Array): Buffer {
  const head = `${method.toUpperCase()}\n${canonicalizeUrl(url)}\n`;
  if (body === undefined || body.length === 0) return hash('sha1', head, 'buffer').subarray(0, FINGERPRINT_BYTES);
  if (typeof body === 'string') return hash('sha1', head + body, 'buffer').subarray(0, FINGERPRINT_BYTES);
  return createHash('sha1').update(head).update(body).digest().subarray(0, FINGERPRINT_BYTES);
}

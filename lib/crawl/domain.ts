/**
 * The registrable domain that names a domain's queue and its throttle (docs/design.md §5: a public-suffix library,
 * tldts; IP literals and `localhost` are their own domain).
 */
import { parse as parseHostname } from 'tldts';
import { normalizedHost } from './extract/url.ts';

// ICANN section only (tldts default), as Scrapy Cluster's scheduler did: it built queue keys from
// `tldextract.TLDExtract()`, whose `include_psl_private_domains` defaults to False. So every
// `*.blogspot.com` or `*.github.io` site shares one queue, which errs on the polite side.
const PSL_OPTIONS = { allowPrivateDomains: false, extractHostname: false, detectIp: true, validateHostname: false };

/**
 * The registrable domain ("eTLD+1") that names a domain's queue: `a.b.example.co.uk` →
 * `example.co.uk`, using the ICANN section of the Public Suffix List only (private suffixes such as
 * `github.io` are not boundaries). The host is normalized as in {@link canonicalizeUrl} (lower case,
 * punycode) and a trailing dot ignored.
 *
 * - IPv4 and IPv6 literals are their own domain: the address itself, IPv6 without brackets.
 * - A host without an ICANN public suffix (`localhost`, `svc.internal`) or that is one (`co.uk`) is
 *   its own domain: the full host name.
 *
 * @param urlOrHost An absolute URL (`scheme://…`) or a bare host, optionally with a port; IPv6 bare or
 *   in brackets.
 * @throws {InvalidUrlError} when there is no valid host to take the domain of.
 */
export function registrableDomain(urlOrHost: string): string {
  const host = normalizedHost(urlOrHost);
  if (host.includes(':')) return host;
  const parsed = parseHostname(host, PSL_OPTIONS);
  if (parsed.isIp || parsed.domain === null || parsed.isIcann !== true) return host;
  return parsed.domain;
}

import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import {
  assertAllowedHost,
  guardedLookup,
  isPublicAddress,
  type LookupFunction,
  literalAddress,
} from '../../lib/crawl/fetch/ssrf.ts';
import { FetchError } from '../../lib/crawl/types.ts';

/** [address, public?]: each blocked range with the addresses just inside and just outside both ends. */
const IPV4: [string, boolean][] = [
  ['0.0.0.0', false],
  ['0.255.255.255', false],
  ['1.0.0.0', true],
  ['8.8.8.8', true],
  ['9.255.255.255', true],
  ['10.0.0.0', false],
  ['10.255.255.255', false],
  ['11.0.0.0', true],
  ['100.63.255.255', true],
  ['100.64.0.0', false],
  ['100.127.255.255', false],
  ['100.128.0.0', true],
  ['126.255.255.255', true],
  ['127.0.0.1', false],
  ['127.255.255.255', false],
  ['128.0.0.0', true],
  ['169.253.255.255', true],
  ['169.254.0.0', false],
  ['169.254.169.254', false],
  ['169.254.255.255', false],
  ['169.255.0.0', true],
  ['172.15.255.255', true],
  ['172.16.0.0', false],
  ['172.31.255.255', false],
  ['172.32.0.0', true],
  ['191.255.255.255', true],
  ['192.0.0.0', false],
  ['192.0.0.255', false],
  ['192.0.1.0', true],
  ['192.0.2.0', false],
  ['192.0.2.255', false],
  ['192.0.3.0', true],
  ['192.88.98.255', true],
  ['192.88.99.1', false],
  ['192.88.100.0', true],
  ['192.167.255.255', true],
  ['192.168.0.0', false],
  ['192.168.255.255', false],
  ['192.169.0.0', true],
  ['198.17.255.255', true],
  ['198.18.0.0', false],
  ['198.19.255.255', false],
  ['198.20.0.0', true],
  ['198.51.99.255', true],
  ['198.51.100.0', false],
  ['198.51.100.255', false],
  ['198.51.101.0', true],
  ['203.0.112.255', true],
  ['203.0.113.0', false],
  ['203.0.113.255', false],
  ['203.0.114.0', true],
  ['223.255.255.255', true],
  ['224.0.0.0', false],
  ['239.255.255.255', false],
  ['240.0.0.0', false],
  ['255.255.255.255', false],
];

const IPV6: [string, boolean][] = [
  ['::', false],
  ['::1', false],
  ['[::1]', false],
  ['0:0:0:0:0:0:0:1', false],
  ['2001:4860:4860::8888', true],
  ['[2606:4700:4700::1111]', true],
  ['2000::', true],
  ['1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', false],
  ['3ffe:ffff::1', true],
  ['4000::', false],
  // Unique local fc00::/7 and the deprecated site-local fec0::/10.
  ['fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', false],
  ['fc00::', false],
  ['fd12:3456::1', false],
  ['fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', false],
  ['fec0::1', false],
  // Link-local fe80::/10, with and without a zone id; multicast ff00::/8.
  ['fe80::', false],
  ['fe80::1%eth0', false],
  ['febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff', false],
  ['ff02::1', false],
  ['ff0e::1', false],
  // IPv4-mapped: judged by the IPv4 address, in both notations.
  ['::ffff:127.0.0.1', false],
  ['[::ffff:127.0.0.1]', false],
  ['::ffff:7f00:1', false],
  ['::ffff:169.254.169.254', false],
  ['::ffff:10.1.2.3', false],
  ['::ffff:8.8.8.8', true],
  ['::ffff:808:808', true],
  ['::FFFF:7F00:1', false],
  ['0:0:0:0:0:ffff:127.0.0.1', false],
  // A zone id: BlockList cannot parse it (and would not match), so it is dropped before the check.
  ['::ffff:127.0.0.1%eth0', false],
  ['FE80::1%eth0', false],
  // IPv4-compatible (deprecated, ::/96): refused whatever the IPv4 part.
  ['::127.0.0.1', false],
  ['::8.8.8.8', false],
  // SIIT ::ffff:0:0:0/96 is outside global unicast.
  ['::ffff:0:8.8.8.8', false],
  // NAT64 well-known prefix 64:ff9b::/96: the embedded IPv4 decides; the local-use 64:ff9b:1::/48 is refused.
  ['64:ff9b::127.0.0.1', false],
  ['64:ff9b::a9fe:a9fe', false],
  ['64:ff9b::192.168.1.1', false],
  ['64:ff9b::8.8.8.8', true],
  ['64:ff9b:1::8.8.8.8', false],
  ['64:ff9b::ffff:8.8.8.8', false],
  // 6to4 2002::/16: the IPv4 address in bits 16..47 decides.
  ['2002:7f00:1::', false],
  ['2002:c0a8:101::1', false],
  ['2002:a9fe:a9fe::1', false],
  ['2002:808:808::1', true],
  // Teredo, benchmarking and the rest of 2001::/23; documentation 2001:db8::/32 and 3fff::/20.
  ['2001::1', false],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', false],
  ['2001:2::1', false],
  ['2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff', false],
  ['2001:200::1', true],
  ['2001:db7:ffff:ffff:ffff:ffff:ffff:ffff', true],
  ['2001:db8::', false],
  ['2001:db8:ffff:ffff:ffff:ffff:ffff:ffff', false],
  ['2001:db9::', true],
  ['3fff::1', false],
  ['3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff', false],
  ['3fff:1000::', true],
  // Discard-only 100::/64.
  ['100::1', false],
];

/** The 6to4 address 2002:AABB:CCDD::1 that embeds the IPv4 address AA.BB.CC.DD. */
function sixToFour(ipv4: string): string {
  const [a = 0, b = 0, c = 0, d = 0] = ipv4.split('.').map(Number);
  return `2002:${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}::1`;
}

describe('isPublicAddress', () => {
  it.each(IPV4)('classifies IPv4 %s as public: %s', (ip, expected) => {
    expect(isPublicAddress(ip)).toBe(expected);
  });

  it.each(IPV4)('judges %s the same in its IPv4-mapped, NAT64 and 6to4 forms (public: %s)', (ip, expected) => {
    expect(isPublicAddress(`::ffff:${ip}`)).toBe(expected);
    expect(isPublicAddress(`64:ff9b::${ip}`)).toBe(expected);
    expect(isPublicAddress(sixToFour(ip))).toBe(expected);
  });

  it.each(IPV6)('classifies IPv6 %s as public: %s', (ip, expected) => {
    expect(isPublicAddress(ip)).toBe(expected);
  });

  it.each(['example.com', '2130706433', '0x7f.1', '127.1', '010.0.0.1', '1.2.3.4.5', '', '[]', 'fe80::1%'])(
    'refuses %j, which is not an address in canonical form (fail closed)',
    (input) => {
      expect(isPublicAddress(input)).toBe(false);
    },
  );
});

describe('URL hosts', () => {
  // WHATWG URL normalises the IPv4 spellings that getaddrinfo would also accept.
  it.each([
    ['http://2130706433/', '127.0.0.1'],
    ['http://0x7f.1/', '127.0.0.1'],
    ['http://0177.0.0.1/', '127.0.0.1'],
    ['http://127.1/', '127.0.0.1'],
    ['http://0/', '0.0.0.0'],
    ['http://0xa9fea9fe/', '169.254.169.254'],
    ['http://[::1]/', '::1'],
    ['http://[::ffff:127.0.0.1]/', '::ffff:7f00:1'],
    ['http://[0:0:0:0:0:0:0:0]/', '::'],
  ])('refuses %s: its host is the literal %s', (url, address) => {
    const parsed = new URL(url);
    expect(literalAddress(parsed.hostname)).toBe(address);
    expect(() => assertAllowedHost(parsed, false)).toThrow(
      expect.objectContaining({ kind: 'blocked_address', retryable: false }),
    );
    expect(() => assertAllowedHost(parsed, true)).not.toThrow();
  });

  it('passes public literals and host names (names are checked at connect time)', () => {
    expect(() => assertAllowedHost(new URL('http://8.8.8.8/'), false)).not.toThrow();
    expect(() => assertAllowedHost(new URL('http://[2606:4700:4700::1111]/'), false)).not.toThrow();
    expect(() => assertAllowedHost(new URL('http://localhost/'), false)).not.toThrow();
    expect(literalAddress('localhost')).toBeUndefined();
  });
});

/** A resolver that answers from a fixed table, counting calls. */
function fakeDns(table: Record<string, string[]>): LookupFunction & { calls: string[] } {
  const calls: string[] = [];
  const lookup: LookupFunction = (hostname, _options, callback) => {
    calls.push(hostname);
    const addresses = table[hostname];
    if (!addresses) {
      const error: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
      error.code = 'ENOTFOUND';
      return callback(error, []);
    }
    callback(
      null,
      addresses.map((address): LookupAddress => ({ address, family: address.includes(':') ? 6 : 4 })),
    );
  };
  return Object.assign(lookup, { calls });
}

function resolveWith(
  lookup: LookupFunction,
  hostname: string,
  all: boolean,
): Promise<{ error: unknown; address: unknown; family: unknown }> {
  return new Promise((resolve) => {
    lookup(hostname, { all }, (error, address, family) => resolve({ error, address, family }));
  });
}

describe('guardedLookup', () => {
  const dns = fakeDns({
    'public.test': ['93.184.215.14'],
    'metadata.test': ['169.254.169.254'],
    'mixed.test': ['10.0.0.5', '93.184.215.14', '::1'],
    'v6.test': ['fd00::1', 'fe80::1'],
  });

  it('answers a public address in both the single and the all form', async () => {
    const lookup = guardedLookup(false, {}, dns);
    expect(await resolveWith(lookup, 'public.test', false)).toEqual({
      error: null,
      address: '93.184.215.14',
      family: 4,
    });
    expect((await resolveWith(lookup, 'public.test', true)).address).toEqual([{ address: '93.184.215.14', family: 4 }]);
  });

  it('refuses a name that resolves to the metadata service with a non-retryable blocked_address error', async () => {
    const { error } = await resolveWith(guardedLookup(false, {}, dns), 'metadata.test', true);
    expect(error).toBeInstanceOf(FetchError);
    expect(error).toMatchObject({ kind: 'blocked_address', retryable: false });
    expect((error as Error).message).toContain('169.254.169.254');
  });

  it('drops the private answers of a mixed (rebinding-style) answer and keeps only the public one', async () => {
    const lookup = guardedLookup(false, {}, dns);
    expect((await resolveWith(lookup, 'mixed.test', true)).address).toEqual([{ address: '93.184.215.14', family: 4 }]);
    expect((await resolveWith(lookup, 'mixed.test', false)).address).toBe('93.184.215.14');
    expect((await resolveWith(lookup, 'v6.test', true)).error).toMatchObject({ kind: 'blocked_address' });
  });

  it('passes everything through when private networks are allowed', async () => {
    const lookup = guardedLookup(true, {}, dns);
    expect((await resolveWith(lookup, 'mixed.test', true)).address).toHaveLength(3);
    expect((await resolveWith(lookup, 'metadata.test', false)).address).toBe('169.254.169.254');
  });

  it('hands DNS failures through unchanged', async () => {
    const { error } = await resolveWith(guardedLookup(false, {}, dns), 'nowhere.test', false);
    expect(error).toMatchObject({ code: 'ENOTFOUND' });
  });

  it('answers overridden names without DNS (case-insensitive, trailing dot) and still checks the address', async () => {
    const calls = dns.calls.length;
    const resolve = { 'Site-A.test': '127.0.0.1', 'pub.test': '93.184.215.14' };
    const strict = guardedLookup(false, resolve, dns);
    expect((await resolveWith(strict, 'site-a.test.', false)).error).toMatchObject({ kind: 'blocked_address' });
    expect((await resolveWith(strict, 'PUB.test', false)).address).toBe('93.184.215.14');
    const open = guardedLookup(true, resolve, dns);
    expect(await resolveWith(open, 'site-a.test', true)).toMatchObject({
      error: null,
      address: [{ address: '127.0.0.1', family: 4 }],
    });
    expect(dns.calls.length).toBe(calls);
  });

  it('passes a trusted override to loopback and still refuses untrusted ones and names resolved by DNS', async () => {
    const resolve = { 'fixture.test': '127.0.0.1', 'secret.test': '127.0.0.1' };
    const lookup = guardedLookup(false, resolve, dns, ['Fixture.test']);
    expect(await resolveWith(lookup, 'fixture.test.', false)).toEqual({ error: null, address: '127.0.0.1', family: 4 });
    expect(await resolveWith(lookup, 'fixture.test', true)).toMatchObject({
      error: null,
      address: [{ address: '127.0.0.1', family: 4 }],
    });
    expect((await resolveWith(lookup, 'secret.test', false)).error).toMatchObject({ kind: 'blocked_address' });
    // Trust is for an override only: a trusted name that DNS resolves to a private address is refused.
    const byDns = guardedLookup(false, {}, dns, ['metadata.test']);
    expect((await resolveWith(byDns, 'metadata.test', false)).error).toMatchObject({ kind: 'blocked_address' });
  });

  it('rejects an override that is not an IP address when built', () => {
    expect(() => guardedLookup(true, { 'a.test': 'b.test' })).toThrow(TypeError);
  });
});

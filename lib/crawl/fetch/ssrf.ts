/**
 * The SSRF guard (docs/design.md §5): the crawler fetches URLs that strangers submit, so it must not be
 * turned against the network it runs in (the instance metadata service at 169.254.169.254, Redis, the
 * VPC). The check runs on the address a socket actually connects to, inside the `lookup` hook that
 * `net.connect` calls after DNS, so a name that resolves to a public address for a pre-check and to a
 * private one for the connection (DNS rebinding) cannot slip past. `net.connect` does not call
 * `lookup` for IP literals, so URLs whose host is an IP literal are checked before connecting
 * ({@link assertAllowedHost}); every redirect hop goes through both checks again.
 *
 * Classification is an allow-list for IPv6 (only global unicast 2000::/3 outside the special-purpose
 * blocks) and a deny-list of the IANA special-purpose blocks for IPv4, both held in `node:net` BlockLists.
 * IPv6 forms that carry an IPv4 address the kernel would reach (IPv4-mapped, NAT64 64:ff9b::/96, 6to4
 * 2002::/16) are judged by that IPv4 address. Anything that does not parse as an address is refused
 * (fail closed).
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP, isIPv4, isIPv6 } from 'node:net';
import { FetchError } from '../types.ts';

/** Node's `dns.lookup` callback shape (with `all: true` the address is an array). */
type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A `dns.lookup`-compatible function, as `net.connect({ lookup })` and undici's `connect.lookup` take it. */
export type LookupFunction = (hostname: string, options: LookupOptions, callback: LookupCallback) => void;

/** Host name → IP address overrides, consulted before DNS (tests, the bench fixture site). */
export type HostMap = Readonly<Record<string, string>>;

// IANA IPv4 special-purpose address registry, plus multicast and the reserved class E block.
const V4_SPECIAL = [
  '0.0.0.0/8', // "this network", including the unspecified 0.0.0.0 (Linux connects it to localhost)
  '10.0.0.0/8',
  '100.64.0.0/10', // carrier-grade NAT (RFC 6598)
  '127.0.0.0/8',
  '169.254.0.0/16', // link-local, including the cloud metadata service 169.254.169.254
  '172.16.0.0/12',
  '192.0.0.0/24', // IETF protocol assignments (DS-Lite, NAT64 discovery)
  '192.0.2.0/24', // TEST-NET-1
  '192.88.99.0/24', // deprecated 6to4 relay anycast
  '192.168.0.0/16',
  '198.18.0.0/15', // benchmarking
  '198.51.100.0/24', // TEST-NET-2
  '203.0.113.0/24', // TEST-NET-3
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, including the limited broadcast 255.255.255.255
];

// Blocks inside 2000::/3 that are not globally reachable.
const V6_SPECIAL = [
  '2001::/23', // IETF protocol assignments: Teredo 2001::/32 (embeds an obfuscated IPv4), benchmarking 2001:2::/48, ORCHID
  '2001:db8::/32', // documentation
  '3fff::/20', // documentation (RFC 9637)
];

function subnet(cidr: string): [base: string, prefix: number] {
  const [base = '', prefix = ''] = cidr.split('/');
  return [base, Number(prefix)];
}

/** The 6to4 prefix 2002:AABB:CCDD:: that embeds the IPv4 address AA.BB.CC.DD in bits 16..47. */
function sixToFour(ipv4: string): string {
  const [a = 0, b = 0, c = 0, d = 0] = ipv4.split('.').map(Number);
  return `2002:${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}::`;
}

/**
 * The IPv6 space the crawler may reach at all: global unicast, plus the two forms outside it whose embedded
 * IPv4 address decides. Everything else (::, ::1, IPv4-compatible ::/96, fc00::/7, fe80::/10, fec0::/10,
 * ff00::/8, 100::/64, 64:ff9b:1::/48, ...) is refused. Only consulted for IPv6 addresses: BlockList matches
 * an IPv6 rule that covers ::ffff:0:0/96 against plain IPv4 addresses too.
 */
const V6_REACHABLE = new BlockList();
V6_REACHABLE.addSubnet('2000::', 3, 'ipv6');
V6_REACHABLE.addSubnet('::ffff:0:0', 96, 'ipv6'); // IPv4-mapped
V6_REACHABLE.addSubnet('64:ff9b::', 96, 'ipv6'); // NAT64 well-known prefix

/**
 * Every refused address inside the reachable space. An IPv4 rule also matches the IPv4-mapped form
 * `::ffff:a.b.c.d` (BlockList compares those as IPv4); the NAT64 and 6to4 embeddings get their own IPv6
 * rules. No IPv6 rule here may cover ::ffff:0:0/96, or it would refuse IPv4 addresses as well.
 */
const BLOCKED = new BlockList();
for (const [base, prefix] of V4_SPECIAL.map(subnet)) {
  BLOCKED.addSubnet(base, prefix, 'ipv4');
  BLOCKED.addSubnet(`64:ff9b::${base}`, 96 + prefix, 'ipv6');
  BLOCKED.addSubnet(sixToFour(base), 16 + prefix, 'ipv6');
}
for (const [base, prefix] of V6_SPECIAL.map(subnet)) BLOCKED.addSubnet(base, prefix, 'ipv6');

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/**
 * Whether an IP address is publicly routable, i.e. safe for the crawler to connect to.
 * @param ip an IPv4 address in dotted-decimal form or an IPv6 address, optionally in brackets (as in
 *   `new URL(...).hostname`) and with a zone id. Anything else (host names, `2130706433`) is not an
 *   address and returns false: URL hosts must go through WHATWG `URL` first, which normalises
 *   `http://2130706433/` and `http://0x7f.1/` to `127.0.0.1`.
 */
export function isPublicAddress(ip: string): boolean {
  const bare = unbracket(ip);
  if (isIPv4(bare)) return !BLOCKED.check(bare, 'ipv4');
  // BlockList does not parse zone ids (fe80::1%eth0), and answers false, i.e. "not blocked", for what it cannot parse.
  const v6 = bare.split('%')[0] ?? '';
  return isIPv6(v6) && V6_REACHABLE.check(v6, 'ipv6') && !BLOCKED.check(v6, 'ipv6');
}

function blocked(hostname: string, address: string): FetchError {
  const via = hostname === address ? '' : ` (resolved from ${hostname})`;
  return new FetchError('blocked_address', `refusing to connect to non-public address ${address}${via}`);
}

/**
 * The IP address a URL host names literally (`127.0.0.1`, `[::1]` → `::1`), or undefined for a host name.
 * @param hostname `URL.hostname`, already normalised by the WHATWG parser.
 */
export function literalAddress(hostname: string): string | undefined {
  const bare = unbracket(hostname);
  return isIP(bare) === 0 ? undefined : bare;
}

/**
 * Refuses a URL whose host is a non-public IP literal; the connect-time `lookup` never sees literals.
 * Host names pass here and are checked by {@link guardedLookup} when the connection is made.
 * @throws FetchError `blocked_address`
 */
export function assertAllowedHost(url: URL, allowPrivate: boolean): void {
  if (allowPrivate) return;
  const literal = literalAddress(url.hostname);
  if (literal !== undefined && !isPublicAddress(literal)) throw blocked(url.hostname, literal);
}

function hostKey(hostname: string): string {
  return hostname.toLowerCase().replace(/\.$/, '');
}

/**
 * Builds the connect-time `lookup` for undici's `connect: { lookup }` (or `net.connect`): resolves the
 * host, then refuses non-public addresses with `FetchError('blocked_address')`. When a name resolves to
 * several addresses (`all: true`, used by Node's happy-eyeballs), the non-public ones are dropped and
 * the error comes only when none is left, so a rebinding answer that mixes a public and a private
 * address can only ever reach the public one.
 *
 * @param allowPrivate skip the check (local runs, tests: `ALLOW_PRIVATE_NETWORKS=true`)
 * @param resolve host name → IP overrides consulted before DNS, e.g. `{ 'site-a.test': '127.0.0.1' }` so
 *   tests and the bench fixture site can serve many host names from one local server. Names match
 *   case-insensitively, ignoring a trailing dot. Overridden addresses are still checked: with
 *   `allowPrivate=false` a name mapped to 127.0.0.1 is refused, which is how the tests exercise the guard.
 * @param lookup the underlying resolver
 * @param trusted names of `resolve` whose override passes unchecked (tests: a fixture site on loopback while every
 *   other non-public address is refused); a name resolved by DNS is never trusted
 * @default resolve `{}`
 * @default lookup `dns.lookup`
 * @throws TypeError when an override is not an IP address (at construction, not at connect time)
 */
export function guardedLookup(
  allowPrivate: boolean,
  resolve: HostMap = {},
  lookup: LookupFunction = dnsLookup as LookupFunction,
  trusted: readonly string[] = [],
): LookupFunction {
  const trustedHosts = new Set(trusted.map(hostKey));
  const overrides = new Map<string, LookupAddress>();
  for (const [host, address] of Object.entries(resolve)) {
    const family = isIP(address);
    if (family === 0) throw new TypeError(`resolve override for ${host} is not an IP address: ${address}`);
    overrides.set(hostKey(host), { address, family });
  }

  const check = (hostname: string, addresses: LookupAddress[]): LookupAddress[] | FetchError => {
    if (allowPrivate) return addresses;
    const allowed = addresses.filter((a) => isPublicAddress(a.address));
    return allowed.length > 0 ? allowed : blocked(hostname, addresses[0]?.address ?? '?');
  };

  return (hostname, options, callback) => {
    const answer = (err: NodeJS.ErrnoException | null, found: LookupAddress[]) => {
      if (err) return callback(err, options.all ? [] : '');
      const result = check(hostname, found);
      if (result instanceof FetchError) return callback(result, options.all ? [] : '');
      if (options.all) return callback(null, result);
      const first = result[0] as LookupAddress;
      return callback(null, first.address, first.family);
    };
    const override = overrides.get(hostKey(hostname));
    if (override && trustedHosts.has(hostKey(hostname))) {
      return process.nextTick(() =>
        options.all ? callback(null, [override]) : callback(null, override.address, override.family),
      );
    }
    if (override) return process.nextTick(answer, null, [override]);
    lookup(hostname, { ...options, all: true }, (err, address) =>
      answer(err, Array.isArray(address) ? address : err ? [] : [{ address, family: isIP(address) }]),
    );
  };
}

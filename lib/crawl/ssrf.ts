/**
 * The SSRF guard (DESIGN.md §5): the crawler fetches URLs that strangers submit, so it must not be
 * turned against the network it runs in (the instance metadata service at 169.254.169.254, Redis, the
 * VPC). The check runs on the address a socket actually connects to, inside the `lookup` hook that
 * `net.connect` calls after DNS, so a name that resolves to a public address for a pre-check and to a
 * private one for the connection (DNS rebinding) cannot slip past. `net.connect` does not call
 * `lookup` for IP literals, so URLs whose host is an IP literal are checked before connecting
 * ({@link assertAllowedHost}); every redirect hop goes through both checks again.
 *
 * Classification is an allow-list for IPv6 (only global unicast 2000::/3 outside the special-purpose
 * blocks) and a deny-list of the IANA special-purpose blocks for IPv4. IPv6 forms that carry an IPv4
 * address the kernel would reach (IPv4-mapped, NAT64 64:ff9b::/96, 6to4 2002::/16) are judged by that
 * IPv4 address. Anything that does not parse as an address is refused (fail closed).
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP, isIPv4, isIPv6 } from 'node:net';
import { FetchError } from './types.ts';

/** Node's `dns.lookup` callback shape (with `all: true` the address is an array). */
export type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/** A `dns.lookup`-compatible function, as `net.connect({ lookup })` and undici's `connect.lookup` take it. */
export type LookupFunction = (hostname: string, options: LookupOptions, callback: LookupCallback) => void;

/** Host name → IP address overrides, consulted before DNS (tests, the bench fixture site). */
export type HostMap = Readonly<Record<string, string>>;

type V4Range = readonly [base: number, prefix: number];
type V6Range = readonly [base: bigint, prefix: number];

function v4(dotted: string): number {
  const parts = dotted.split('.').map(Number);
  return (((parts[0] ?? 0) << 24) | ((parts[1] ?? 0) << 16) | ((parts[2] ?? 0) << 8) | (parts[3] ?? 0)) >>> 0;
}

function v4Range(cidr: string): V4Range {
  const [base = '', prefix = '32'] = cidr.split('/');
  return [v4(base), Number(prefix)];
}

// IANA IPv4 special-purpose address registry, plus multicast and the reserved class E block.
const V4_BLOCKED: readonly V4Range[] = [
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
].map(v4Range);

function parseV6(text: string): bigint | undefined {
  const address = text.split('%')[0] ?? ''; // drop a zone id (fe80::1%eth0)
  if (!isIPv6(address)) return undefined;
  const halves = address.split('::');
  const groups = (half: string | undefined): number[] => {
    if (!half) return [];
    const out: number[] = [];
    for (const part of half.split(':')) {
      if (part.includes('.')) {
        const n = v4(part);
        out.push(n >>> 16, n & 0xffff);
      } else out.push(Number.parseInt(part, 16));
    }
    return out;
  };
  const head = groups(halves[0]);
  const tail = groups(halves[1]);
  const all =
    halves.length === 2 ? [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail] : head;
  let value = 0n;
  for (const g of all) value = (value << 16n) | BigInt(g);
  return value;
}

function v6Range(cidr: string): V6Range {
  const [base = '', prefix = '128'] = cidr.split('/');
  return [parseV6(base) ?? 0n, Number(prefix)];
}

function inV6(ip: bigint, [base, prefix]: V6Range): boolean {
  const shift = BigInt(128 - prefix);
  return ip >> shift === base >> shift;
}

function inV4(ip: number, [base, prefix]: V4Range): boolean {
  if (prefix === 0) return true;
  const mask = (0xffffffff << (32 - prefix)) >>> 0;
  return (ip & mask) >>> 0 === base;
}

const GLOBAL_UNICAST = v6Range('2000::/3');
// Blocks inside 2000::/3 that are not globally reachable.
const V6_BLOCKED: readonly V6Range[] = [
  '2001::/23', // IETF protocol assignments: Teredo 2001::/32 (embeds an obfuscated IPv4), benchmarking 2001:2::/48, ORCHID
  '2001:db8::/32', // documentation
  '3fff::/20', // documentation (RFC 9637)
].map(v6Range);
// IPv6 forms that embed an IPv4 address in their low 32 bits; the IPv4 address decides.
const V4_MAPPED = v6Range('::ffff:0:0/96');
const NAT64 = v6Range('64:ff9b::/96');
// 6to4 (2002:AABB:CCDD::/48) embeds the IPv4 address AA.BB.CC.DD in bits 16..47.
const SIX_TO_FOUR = v6Range('2002::/16');

function isPublicV4(ip: number): boolean {
  return !V4_BLOCKED.some((range) => inV4(ip, range));
}

function isPublicV6(ip: bigint): boolean {
  if (inV6(ip, V4_MAPPED) || inV6(ip, NAT64)) return isPublicV4(Number(ip & 0xffffffffn));
  if (inV6(ip, SIX_TO_FOUR)) return isPublicV4(Number((ip >> 80n) & 0xffffffffn));
  // Everything outside 2000::/3 (::, ::1, IPv4-compatible ::/96, fc00::/7, fe80::/10, fec0::/10, ff00::/8,
  // 100::/64, 64:ff9b:1::/48, ...) is refused.
  return inV6(ip, GLOBAL_UNICAST) && !V6_BLOCKED.some((range) => inV6(ip, range));
}

/**
 * Whether an IP address is publicly routable, i.e. safe for the crawler to connect to.
 * @param ip an IPv4 address in dotted-decimal form or an IPv6 address, optionally in brackets (as in
 *   `new URL(...).hostname`) and with a zone id. Anything else (host names, `2130706433`) is not an
 *   address and returns false: URL hosts must go through WHATWG `URL` first, which normalises
 *   `http://2130706433/` and `http://0x7f.1/` to `127.0.0.1`.
 */
export function isPublicAddress(ip: string): boolean {
  const bare = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  if (isIPv4(bare)) return isPublicV4(v4(bare));
  const v6 = parseV6(bare);
  return v6 !== undefined && isPublicV6(v6);
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
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
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
 * @default resolve `{}`
 * @default lookup `dns.lookup`
 * @throws TypeError when an override is not an IP address (at construction, not at connect time)
 */
export function guardedLookup(
  allowPrivate: boolean,
  resolve: HostMap = {},
  lookup: LookupFunction = dnsLookup as LookupFunction,
): LookupFunction {
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
    if (override) return process.nextTick(answer, null, [override]);
    lookup(hostname, { ...options, all: true }, (err, address) =>
      answer(err, Array.isArray(address) ? address : err ? [] : [{ address, family: isIP(address) }]),
    );
  };
}

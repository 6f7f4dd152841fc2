/**
 * The TypeScript side of the queue member format (the Lua side is scripts/includes/frontier.lua, whose
 * header is the reference). A queued request is one ZSET member, which doubles as its lease handle:
 *
 *     <domain> \0 <pe:2> <seq:8> <ref> <depth> <retries> <tail>
 *
 * - `pe` is `1024 - priority` and `seq` the request's sequence number, in fixed-width base 62 over an
 *   alphabet in ASCII order (`0-9A-Z a-z`), so byte order is numeric order;
 * - `ref`, `depth`, `retries` are small integers, self-delimiting: one digit for 0..60, else `z<base 62>.`;
 * - `tail` is the URL relative to its registrable domain ({@link memberTail}): one flag byte for the scheme
 *   and the host's shape (the domain, `www.` + domain, `<sub>.` + domain, or anything else), then the rest
 *   of the URL in the HPACK Huffman code (huffman.ts). The domain that prefixes the member and the scheme
 *   are not stored again. Every URL round-trips exactly.
 *
 * Members are binary (the tail), so a lease handle is a binary string: one char per byte (latin1), turned
 * back into bytes with {@link memberBytes}. Only the Lua scripts build members; here we format the tail
 * they are given and parse what they return.
 */
import { huffmanDecode, huffmanEncode } from './huffman.ts';

const B62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const D62 = new Map([...B62].map((ch, i) => [ch.charCodeAt(0), i]));
const P0 = 1024;

/** Tail flags per scheme: the host is the domain, `www.` + domain, or `<sub>.` + domain; RAW: the whole URL. */
const SCHEMES = ['https://', 'http://'] as const;
const FLAGS = ['abc', 'def'] as const;
const RAW = 'r';

function b62Number(s: Uint8Array, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) n = n * 62 + (D62.get(s[i] as number) ?? 0);
  return n;
}

/** The small integer at `i` (see the module doc) and the position after it. */
function readSmall(s: Uint8Array, i: number): [number, number] {
  if (s[i] !== 122 /* z */) return [D62.get(s[i] as number) ?? 0, i + 1];
  const j = s.indexOf(46 /* . */, i + 1);
  return [b62Number(s, i + 1, j), j + 1];
}

/** The priority encoded as `pe` (2 base-62 digits), as in members and info counters. */
export function decodePriority(pe: string): number {
  return P0 - (D62.get(pe.charCodeAt(0)) ?? 0) * 62 - (D62.get(pe.charCodeAt(1)) ?? 0);
}

/** The end of the host in a URL whose authority starts at `from`: the first `/`, `?` or `#`. */
function hostEnd(s: string, from: number): number {
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 47 /* / */ || c === 63 /* ? */ || c === 35 /* # */) return i;
  }
  return s.length;
}

function tail(flag: string, payload: string): Buffer {
  const body = huffmanEncode(Buffer.from(payload, 'utf8'));
  const out = Buffer.allocUnsafe(body.length + 1);
  out[0] = flag.charCodeAt(0);
  body.copy(out, 1);
  return out;
}

/** The member tail of `url` under its registrable `domain`: what enqueue sends instead of the URL. */
export function memberTail(url: string, domain: string): Buffer {
  for (let k = 0; k < SCHEMES.length; k++) {
    const scheme = SCHEMES[k] as string;
    if (!url.startsWith(scheme)) continue;
    const end = hostEnd(url, scheme.length);
    const host = url.slice(scheme.length, end);
    const rest = url.slice(end);
    const flags = FLAGS[k] as string;
    if (host === domain) return tail(flags[0] as string, rest);
    if (host.length === domain.length + 4 && host.startsWith('www.') && host.endsWith(domain)) {
      return tail(flags[1] as string, rest);
    }
    if (host.length > domain.length + 1 && host.endsWith(`.${domain}`)) {
      // The decoder finds the end of <sub> the way hostEnd found the end of the host.
      return tail(flags[2] as string, host.slice(0, host.length - domain.length - 1) + rest);
    }
    break;
  }
  return tail(RAW, url);
}

/** The URL of a member tail (bytes `from`.. of `m`) under `domain`: the inverse of {@link memberTail}. */
function tailUrl(m: Buffer, from: number, domain: string): string {
  const flag = String.fromCharCode(m[from] as number);
  const payload = huffmanDecode(m, from + 1).toString('utf8');
  if (flag === RAW) return payload;
  const k = FLAGS.findIndex((f) => f.includes(flag));
  if (k < 0) throw new Error(`not a member tail (flag ${JSON.stringify(flag)})`);
  const scheme = SCHEMES[k] as string;
  const shape = (FLAGS[k] as string).indexOf(flag);
  if (shape === 0) return `${scheme}${domain}${payload}`;
  if (shape === 1) return `${scheme}www.${domain}${payload}`;
  const end = hostEnd(payload, 0);
  return `${scheme}${payload.slice(0, end)}.${domain}${payload.slice(end)}`;
}

/** The bytes of a member held as a binary string (a lease handle). */
export function memberBytes(handle: string): Buffer {
  return Buffer.from(handle, 'latin1');
}

/** A member's bytes as a binary string (a lease handle). */
export function memberHandle(member: Buffer): string {
  return member.toString('latin1');
}

/** What a member (a lease handle) says about its request. */
export interface ParsedMember {
  url: string;
  domain: string;
  priority: number;
  depth: number;
  retries: number;
}

/** Parses a member as the Lua scripts build it (the inverse of build_member in includes/frontier.lua). */
export function parseMember(member: Buffer): ParsedMember {
  const i = member.indexOf(0);
  if (i < 0) throw new Error('not a queue member');
  const domain = member.toString('utf8', 0, i);
  const priority = P0 - b62Number(member, i + 1, i + 3);
  const [, afterRef] = readSmall(member, i + 11);
  const [depth, afterDepth] = readSmall(member, afterRef);
  const [retries, afterRetries] = readSmall(member, afterDepth);
  return { url: tailUrl(member, afterRetries, domain), domain, priority, depth, retries };
}

/** Where a member sits and whose it is: its domain, sequence number (8 base-62 digits) and crawl ref (as stored). */
export interface MemberPlace {
  domain: string;
  seq: string;
  ref: string;
}

/**
 * A member's {@link MemberPlace}, without decoding its URL: what `frontier reshard` (lib/redis/reshard.ts) needs to
 * tell the domain's new partition and whether the request's crawl is alive (includes/frontier.lua `alive_in`).
 */
export function memberPlace(member: Buffer): MemberPlace {
  const i = member.indexOf(0);
  if (i < 0) throw new Error('not a queue member');
  const [, afterRef] = readSmall(member, i + 11);
  return {
    domain: member.toString('utf8', 0, i),
    seq: member.toString('latin1', i + 3, i + 11),
    ref: member.toString('latin1', i + 11, afterRef),
  };
}

/** The number of a crawl ref as members and records store it (a small integer: see the module doc). */
export function refNumber(ref: string): number {
  return readSmall(Buffer.from(ref, 'latin1'), 0)[0];
}

/**
 * The URL Frontier store's model (lib/redis/url-frontier/store.ts): what it stores and serves (URL items, served URLs, packed
 * queues, records, stats), the members that encode a URL within its queue, queue keys and their domains, and the
 * bounds of its script calls and scans.
 */
import { registrableDomain } from '../../crawl/domain.ts';

/** Metadata of a URL: name → values. */
export type Metadata = Record<string, string[]>;

/** One URL to store: discovered (added if unknown) or known (overwrites; date 0 = completed). */
export interface PutItem {
  crawl: string;
  key: string;
  url: string;
  kind: 'discovered' | 'known';
  /** Next-fetch date, epoch s (known only; 0 = completed). */
  date: number;
  metadata: Metadata;
}

export type PutStatus = 'OK' | 'SKIPPED';

export interface ServedUrl {
  crawl: string;
  key: string;
  url: string;
  metadata: Metadata;
}

/**
 * The URLs uf-serve.lua handed out from one queue, as it packs them: per URL `<byte length>:<member>` and
 * `<byte length>:<metadata JSON, empty for none>` (members: {@link urlMember}).
 */
export interface PackedQueue {
  crawl: string;
  key: string;
  packed: Buffer;
  /** How many URLs `packed` holds; -1 when it was not served for want of its keys (UrlFrontierStore.serveGroups). */
  count: number;
}

export interface UrlRecord {
  crawl: string;
  key: string;
  url: string;
  metadata: Metadata;
  /** Next-fetch date, epoch s; 0 when completed. */
  date: number;
  /** Creation date, epoch s. */
  created: number;
}

export interface QueueStats {
  size: number;
  inProcess: number;
  completed: number;
  activeQueues: number;
  numberOfQueues: number;
}

export interface GetUrlsRequest {
  /** One crawl, or undefined for every crawl. */
  crawl?: string;
  /** One queue (requires `crawl`). */
  key?: string;
  maxUrlsPerQueue: number;
  maxQueues: number;
  /** Seconds a served URL stays held. */
  holdSeconds: number;
  /** True once the client is gone: no more queues are served (URLs already taken stay held until they expire). */
  cancelled?: () => boolean;
}

const QUEUE_KEY_MAX = 255;

/**
 * `fn` over every item, {@link SCAN_PAGE} at a time (each page's Redis commands pipelined together), so a crawl
 * of 100,000 queues does not put 100,000 × 4 commands in flight at once. Results in input order.
 */
export async function inChunks<T, R>(items: readonly T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += SCAN_PAGE)
    out.push(...(await Promise.all(items.slice(i, i + SCAN_PAGE).map(fn))));
  return out;
}

/** HSCAN page (and ZMSCORE/HMGET batch) size of the admin reads over a whole queue. */
export const SCAN_PAGE = 1000;

/** PutURLs: queues and items stored by one script call at most. */
export const QUEUES_PER_CALL = 256;
export const ITEMS_PER_CALL = 1000;

/**
 * GetURLs: the most URLs one script call takes from one queue (a queue with more due is served again, see
 * uf-serve.lua), so one call holds Redis for milliseconds, not seconds, whatever a client asks.
 */
export const SERVE_CAP = 1000;

/** GetURLs: queues served per script call. */
export const SERVE_WAVE = 32;

/** GetURLs: the fewest and the most serve calls (waves) one stream keeps in flight ({@link serveWavesAhead}). */
const SERVE_WAVES_MIN = 2;
const SERVE_WAVES_MAX = 8;

/**
 * GetURLs: the most URLs that waves served but not yet written to the stream may hold, counted as if every queue gave
 * all it may (the request's max per queue, at most {@link SERVE_CAP}): the fewest waves of queues that give 1,000 each.
 */
export const SERVE_AHEAD_URLS = SERVE_WAVES_MIN * SERVE_WAVE * SERVE_CAP;

/**
 * GetURLs: how many serve calls (waves) are in flight at once for a request with `maxUrlsPerQueue` (0: no max, so
 * {@link SERVE_CAP}): as many as {@link SERVE_AHEAD_URLS} allows, from 2 (a max of 1,000, or none) to 8 (a max of 250
 * or less). More calls queued keep Redis busy while the stream is written, which is what a GetURLs over many small
 * queues waits on; the bound keeps what one stream holds in the server where it was with two waves.
 */
export function serveWavesAhead(maxUrlsPerQueue: number): number {
  const perQueue = maxUrlsPerQueue > 0 ? Math.min(maxUrlsPerQueue, SERVE_CAP) : SERVE_CAP;
  const fit = Math.floor(SERVE_AHEAD_URLS / (SERVE_WAVE * perQueue));
  return Math.min(SERVE_WAVES_MAX, Math.max(SERVE_WAVES_MIN, fit));
}

/**
 * GetURLs: due queues claimed per uf-claim call: the most waves in flight, so the next claim is answered while the
 * claimed queues are still being served and Redis never waits for one. A claim over one crawl looks at up to four
 * times this many queues in one call (uf-claim.lua).
 */
export const CLAIM_MAX = SERVE_WAVES_MAX * SERVE_WAVE;

/**
 * GetURLs: how long a claimed queue is kept from other GetURLs calls until uf-serve places it (it does so within
 * milliseconds; the claim only matters when a server dies or a client cancels in between, and costs them this delay).
 */
export const CLAIM_MS = 2000;

/**
 * GetURLs: how often a queue of a blacklisted domain is looked at again (nothing indexes queues by domain, so a
 * blacklist entry's removal is seen this late at most; each such queue costs one look per interval, not per call).
 */
export const BLACKLIST_RECHECK_MS = 1000;

/**
 * The code the store's scripts answer with (a Redis error `UFMOVE <message>`) while `frontier reshard` fences the
 * frontier (scripts/includes/uf.lua fence()): the message says whether a move is under way or the frontier moved to
 * another partition count. The server answers UNAVAILABLE with the message.
 */
const FENCE_ERROR = 'UFMOVE';

/** The error a script answers while the frontier is fenced, for a call that finds the fence before any script. */
export function fenceError(message: string): Error {
  return new Error(`${FENCE_ERROR} ${message}`);
}

/** The message of a fence error ({@link FENCE_ERROR}), or undefined for any other error. */
export function fenceMessage(error: unknown): string | undefined {
  const message = (error as Error | undefined)?.message;
  return typeof message === 'string' && message.startsWith(`${FENCE_ERROR} `)
    ? message.slice(FENCE_ERROR.length + 1)
    : undefined;
}

/** The crawl ID as the API normalises it: blank means `DEFAULT`, anything else unchanged. */
export function normaliseCrawl(crawl: string | undefined): string {
  return !crawl || crawl.trim() === '' ? 'DEFAULT' : crawl;
}

/**
 * A queue's member in the due index over every crawl (keys.ts `queueDue`): the crawl ID's byte length, `:`, the crawl
 * ID and the queue key (scripts/includes/uf.lua builds the same), so any crawl ID and key can be split apart again.
 */
export function queueMember(crawl: string, key: string): string {
  return `${Buffer.byteLength(crawl)}:${crawl}${key}`;
}

/** The queue key derived from a URL (its host, as the reference cuts it), or undefined when there is none. */
export function queueKeyOf(url: string): string | undefined {
  let rest = url;
  const scheme = rest.indexOf('://');
  if (scheme >= 0) rest = rest.slice(scheme + 3);
  for (const sep of [':', '/', '?', '&']) {
    const at = rest.indexOf(sep);
    if (at >= 0) rest = rest.slice(0, at);
  }
  return rest === '' ? undefined : rest;
}

/** A queue key the store accepts: non-empty and at most 255 characters. */
export function validQueueKey(key: string): boolean {
  return key.length > 0 && key.length <= QUEUE_KEY_MAX;
}

export function parseMetadata(json: string | null | undefined): Metadata {
  if (!json || json === '{}') return {};
  try {
    return JSON.parse(json) as Metadata;
  } catch {
    return {};
  }
}

/** Splits uf-serve's packed reply (`<byte length>:<bytes>` repeated) into its strings. */
export function unpackServed(packed: Buffer | null | undefined): string[] {
  const out: string[] = [];
  if (!packed) return out;
  let at = 0;
  while (at < packed.length) {
    const colon = packed.indexOf(0x3a, at);
    if (colon < 0) throw new Error('uf-serve: malformed reply');
    const len = Number(packed.toString('latin1', at, colon));
    const end = colon + 1 + len;
    if (!Number.isInteger(len) || end > packed.length) throw new Error('uf-serve: malformed reply');
    out.push(packed.toString('utf8', colon + 1, end));
    at = end;
  }
  return out;
}

/** The URLs of a {@link PackedQueue}. */
export function servedUrls(queue: PackedQueue): ServedUrl[] {
  const { crawl, key } = queue;
  const out: ServedUrl[] = [];
  const fields = unpackServed(queue.packed);
  for (let i = 0; i < fields.length; i += 2)
    out.push({ crawl, key, url: memberUrl(key, fields[i] as string), metadata: parseMetadata(fields[i + 1]) });
  return out;
}

/** Metadata as stored after the creation date: nothing for none (the common case), else its JSON. */
export function metadataValue(metadata: Metadata): string {
  for (const _ in metadata) return JSON.stringify(metadata);
  return '';
}

/** Splits a `created` field value `<creation date>\t<metadata JSON>` (see redis/keys.ts). */
export function splitCreated(value: string | null | undefined): { created: number; metadata: string } {
  if (value === null || value === undefined) return { created: 0, metadata: '{}' };
  const tab = value.indexOf('\t');
  if (tab < 0) return { created: Number(value), metadata: '{}' };
  return { created: Number(value.slice(0, tab)), metadata: value.slice(tab + 1) };
}

/**
 * The form a URL takes inside its queue's Redis keys (redis/keys.ts): a URL `http://<key>…` or `https://<key>…`
 * (the host is the queue key, as it is whenever the client leaves the key empty) loses that prefix for one byte,
 * 0x01 or 0x02, which sort in the same order as the prefixes did. Every other URL is kept as it is (a 0x00 byte
 * is put before one that starts with a byte ≤ 0x02, so nothing is ambiguous). The host is in every URL of a
 * queue and in its key name, so storing it once per URL in two structures was a third of the bytes per URL.
 */
export function urlMember(key: string, url: string): string {
  for (const [code, scheme] of MEMBER_PREFIXES) {
    const prefix = `${scheme}${key}`;
    if (url.startsWith(prefix)) {
      const next = url.charCodeAt(prefix.length);
      // Only at a host boundary: `http://a.com` must not eat the start of `http://a.com.evil/`.
      if (Number.isNaN(next) || next === 0x2f || next === 0x3f || next === 0x3a || next === 0x23)
        return code + url.slice(prefix.length);
    }
  }
  return url.charCodeAt(0) <= 2 ? `\u0000${url}` : url;
}

/** The URL of a member of `key`'s queue (the inverse of {@link urlMember}). */
export function memberUrl(key: string, member: string): string {
  const c = member.charCodeAt(0);
  if (c === 1) return `http://${key}${member.slice(1)}`;
  if (c === 2) return `https://${key}${member.slice(1)}`;
  if (c === 0) return member.slice(1);
  return member;
}

const MEMBER_PREFIXES: [string, string][] = [
  ['\u0001', 'http://'],
  ['\u0002', 'https://'],
];

/**
 * The registrable domain of a queue key that is a host name (what the Kafka API's domain overrides and blacklist
 * name); any other key is its own domain.
 */
export function queueDomain(key: string): string {
  try {
    return registrableDomain(key);
  } catch {
    return key;
  }
}

/**
 * Orders strings as Redis orders the members of a sorted set with equal scores: by their UTF-8 bytes, i.e. by code
 * point. JavaScript's `<` compares UTF-16 code units, which differs only where a surrogate (a code point past U+FFFF)
 * meets a code unit at or above U+E000; so does this, then.
 */
export function byteOrder(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    const sx = x >= 0xd800 && x <= 0xdfff;
    const sy = y >= 0xd800 && y <= 0xdfff;
    if (sx !== sy) return sx ? 1 : -1;
    return x - y;
  }
  return a.length - b.length;
}

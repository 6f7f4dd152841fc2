/**
 * The URL Frontier API's state, all in Redis (it survives restarts and is shared by every server instance):
 * crawls, queues per crawl, URLs per queue with metadata, next-fetch and creation dates and the completed flag,
 * holds (leases), per-queue delay / blockedUntil / crawl limit / lastProduced, the default delay and the active
 * flag. Keys: redis/keys.ts (one hash tag per prefix); atomic steps: scripts/uf-*.lua.
 */

import { registrableDomain } from '../crawl/domain.ts';
import type { UrlFrontierView } from '../ports.ts';
import type { RedisClient } from '../redis/client.ts';
import type { DomainAction } from '../redis/frontier-types.ts';
import {
  urlFrontierCrawlKeys,
  urlFrontierGlobalKeys,
  urlFrontierQueueKeyList,
  urlFrontierQueueKeys,
  urlFrontierScriptKeys,
} from '../redis/keys.ts';
import { runScript, runScriptBuffer, script } from '../redis/scripts.ts';

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
  /** How many URLs `packed` holds. */
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
async function inChunks<T, R>(items: readonly T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += SCAN_PAGE)
    out.push(...(await Promise.all(items.slice(i, i + SCAN_PAGE).map(fn))));
  return out;
}

/** HSCAN page (and ZMSCORE/HMGET batch) size of the admin reads over a whole queue. */
const SCAN_PAGE = 1000;

/** PutURLs: queues and items stored by one script call at most. */
const QUEUES_PER_CALL = 256;
const ITEMS_PER_CALL = 1000;

/**
 * GetURLs: the most URLs one script call takes from one queue (a queue with more due is served again, see
 * uf-serve.lua), so one call holds Redis for milliseconds, not seconds, whatever a client asks.
 */
export const SERVE_CAP = 1000;

/** GetURLs: queues served per script call, and calls in flight at once. */
const SERVE_WAVE = 16;
const SERVE_WAVES_AHEAD = 4;

/** GetURLs: due queues claimed per uf-claim call (the waves in flight at once). */
const CLAIM_MAX = SERVE_WAVE * SERVE_WAVES_AHEAD;

/**
 * GetURLs: how long a claimed queue is kept from other GetURLs calls until uf-serve places it (it does so within
 * milliseconds; the claim only matters when a server dies or a client cancels in between, and costs them this delay).
 */
const CLAIM_MS = 2000;

/**
 * GetURLs: how often a queue of a blacklisted domain is looked at again (nothing indexes queues by domain, so a
 * blacklist entry's removal is seen this late at most; each such queue costs one look per interval, not per call).
 */
export const BLACKLIST_RECHECK_MS = 1000;

/** The crawl ID as the API normalises it: blank means `DEFAULT`, anything else unchanged. */
export function normaliseCrawl(crawl: string | undefined): string {
  return !crawl || crawl.trim() === '' ? 'DEFAULT' : crawl;
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

function parseMetadata(json: string | null | undefined): Metadata {
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
function metadataValue(metadata: Metadata): string {
  for (const _ in metadata) return JSON.stringify(metadata);
  return '';
}

/** Splits a `created` field value `<creation date>\t<metadata JSON>` (see redis/keys.ts). */
function splitCreated(value: string | null | undefined): { created: number; metadata: string } {
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

export class UrlFrontierStore implements UrlFrontierView {
  readonly redis: RedisClient;
  readonly prefix: string;
  readonly #now: () => number;

  /** @param now the clock, epoch ms (injectable for tests) */
  constructor(redis: RedisClient, prefix: string, now: () => number = Date.now) {
    this.redis = redis;
    this.prefix = prefix;
    this.#now = now;
  }

  #keys(crawl: string, key: string): string[] {
    return urlFrontierQueueKeyList(this.prefix, crawl, key);
  }

  /** Every crawl that has at least one queue. */
  async crawls(): Promise<string[]> {
    return (await this.redis.smembers(urlFrontierGlobalKeys(this.prefix).crawls)).sort();
  }

  /** The queue keys of a crawl, in lexicographic order. */
  async queues(crawl: string): Promise<string[]> {
    return this.redis.zrange(urlFrontierCrawlKeys(this.prefix, crawl).queues, '0', '-1');
  }

  async hasQueue(crawl: string, key: string): Promise<boolean> {
    return (await this.redis.zscore(urlFrontierCrawlKeys(this.prefix, crawl).queues, key)) !== null;
  }

  /**
   * Stores items, grouped per crawl and queue: one script call per crawl for up to {@link QUEUES_PER_CALL} of its
   * queues and {@link ITEMS_PER_CALL} items; statuses in input order.
   */
  async put(items: PutItem[]): Promise<PutStatus[]> {
    const now = Math.floor(this.#now() / 1000);
    const byCrawl = new Map<string, Map<string, number[]>>();
    items.forEach((item, i) => {
      let queues = byCrawl.get(item.crawl);
      if (!queues) {
        queues = new Map();
        byCrawl.set(item.crawl, queues);
      }
      const group = queues.get(item.key);
      if (group) group.push(i);
      else queues.set(item.key, [i]);
    });
    // Calls of at most QUEUES_PER_CALL queues and ITEMS_PER_CALL items; a queue with more items spans calls,
    // which Redis runs in the order they are sent (one connection: all keys share one slot).
    const calls: { crawl: string; groups: [string, number[]][] }[] = [];
    for (const [crawl, queues] of byCrawl) {
      let call: { crawl: string; groups: [string, number[]][] } | undefined;
      let items = 0;
      for (const [key, indexes] of queues) {
        for (let from = 0; from < indexes.length; ) {
          if (!call || call.groups.length === QUEUES_PER_CALL || items === ITEMS_PER_CALL) {
            call = { crawl, groups: [] };
            calls.push(call);
            items = 0;
          }
          const part = indexes.slice(from, from + ITEMS_PER_CALL - items);
          call.groups.push([key, part]);
          items += part.length;
          from += part.length;
        }
      }
    }
    const out: PutStatus[] = new Array(items.length);
    await Promise.all(
      calls.map(async ({ crawl, groups }) => {
        const args: (string | number)[] = [crawl, now];
        for (const [key, indexes] of groups) {
          args.push(key, queueDomain(key), indexes.length);
          for (const i of indexes) {
            const it = items[i] as PutItem;
            args.push(
              it.kind === 'discovered' ? 'd' : 'k',
              urlMember(key, it.url),
              Math.max(0, Math.floor(it.date)),
              metadataValue(it.metadata),
            );
          }
        }
        const keys = urlFrontierScriptKeys(
          this.prefix,
          crawl,
          groups.map(([key]) => key),
        );
        const res = await runScript<number[]>(this.redis, script('uf-put'), keys, args);
        let j = 0;
        for (const [, indexes] of groups) {
          for (const i of indexes) out[i] = res[j++] === 0 ? 'OK' : 'SKIPPED';
        }
      }),
    );
    return out;
  }

  /** Serves one queue (see uf-serve.lua). */
  async serveQueue(crawl: string, key: string, maxUrls: number, holdSeconds: number): Promise<ServedUrl[]> {
    return (await this.serveQueues(crawl, [key], maxUrls, holdSeconds))[0] ?? [];
  }

  /** Serves queues of one crawl in one script call (see uf-serve.lua): the URLs of each, in `keys` order. */
  async serveQueues(crawl: string, keys: string[], maxUrls: number, holdSeconds: number): Promise<ServedUrl[][]> {
    return (await this.servePacked(crawl, keys, maxUrls, holdSeconds)).map(servedUrls);
  }

  /**
   * {@link serveQueues} with each queue's URLs left in uf-serve's packed form (for encoders that take bytes), at most
   * {@link SERVE_CAP} per queue; `continuing` serves queues again in the same GetURLs (see uf-serve.lua).
   */
  async servePacked(
    crawl: string,
    keys: string[],
    maxUrls: number,
    holdSeconds: number,
    continuing = false,
  ): Promise<PackedQueue[]> {
    const now = this.#now();
    const [replies, counts] = await runScriptBuffer<[Buffer[], number[]]>(
      this.redis,
      script('uf-serve'),
      urlFrontierScriptKeys(this.prefix, crawl, keys),
      [crawl, now, maxUrls, now + holdSeconds * 1000, SERVE_CAP, continuing ? 1 : 0, BLACKLIST_RECHECK_MS, ...keys],
    );
    return keys.map((key, q) => ({ crawl, key, packed: replies[q] ?? Buffer.alloc(0), count: counts[q] ?? 0 }));
  }

  /**
   * A served queue, then, while it gave {@link SERVE_CAP} URLs (it has more due and the client set no lower max),
   * the same queue served again within this GetURLs: each script call stays short, however much a client asks.
   */
  async #emitServed(
    queue: PackedQueue,
    req: GetUrlsRequest,
    emit: (queue: PackedQueue) => void | Promise<void>,
  ): Promise<void> {
    let q = queue;
    await emit(q);
    while (q.count === SERVE_CAP && !req.cancelled?.()) {
      [q] = (await this.servePacked(q.crawl, [q.key], req.maxUrlsPerQueue, req.holdSeconds, true)) as [PackedQueue];
      if (q.count === 0) return;
      await emit(q);
    }
  }

  /**
   * GetURLs: one queue with `key`, else the queues of the crawl (or of every crawl) whose time in the `due` index has
   * come, the longest-due first, each at most once, stopping once `maxQueues` queues produced. Queues with nothing
   * due are never looked at, so the cost is O(log q + queues looked at), not O(queues of the crawl). Calls `emit` per
   * served queue.
   */
  async getUrls(req: GetUrlsRequest, emit: (urls: ServedUrl[]) => void | Promise<void>): Promise<void> {
    await this.getUrlsPacked(req, (queue) => emit(servedUrls(queue)));
  }

  /** {@link getUrls} with each served queue's URLs in uf-serve's packed form. */
  async getUrlsPacked(req: GetUrlsRequest, emit: (queue: PackedQueue) => void | Promise<void>): Promise<void> {
    if (!(await this.active())) return;
    if (req.key !== undefined) {
      if (req.crawl === undefined) return;
      const [queue] = await this.servePacked(req.crawl, [req.key], req.maxUrlsPerQueue, req.holdSeconds);
      if (queue && queue.count > 0) await this.#emitServed(queue, req, emit);
      return;
    }
    const crawls = req.crawl !== undefined ? [req.crawl] : await this.crawls();
    // Claims are of the queues due by this request's start: a queue looked at is placed after the time it was served
    // (uf-serve.lua), so it is not claimed again by this request, and the loop ends.
    const start = this.#now();
    let produced = 0;
    const budget = () => (req.maxQueues > 0 ? req.maxQueues - produced : Number.POSITIVE_INFINITY);
    for (const crawl of crawls) {
      const { due, legacyRotation } = urlFrontierCrawlKeys(this.prefix, crawl);
      while (budget() > 0) {
        if (req.cancelled?.()) return;
        const keys = await runScript<string[]>(
          this.redis,
          script('uf-claim'),
          [due, legacyRotation],
          [start, Math.min(budget(), CLAIM_MAX), CLAIM_MS],
        );
        if (keys.length === 0) break;
        // The queues go out in waves of SERVE_WAVE (one script call each), SERVE_WAVES_AHEAD waves in flight, so
        // the stream is written while Redis still serves the later queues (one call for every queue would hold
        // back the first URL until Redis served the last queue).
        const waves: Promise<PackedQueue[]>[] = [];
        let next = 0;
        const launch = () => {
          while (waves.length < SERVE_WAVES_AHEAD && next < keys.length && !req.cancelled?.()) {
            const wave = this.servePacked(
              crawl,
              keys.slice(next, next + SERVE_WAVE),
              req.maxUrlsPerQueue,
              req.holdSeconds,
            );
            next += SERVE_WAVE;
            // Replies that are not awaited yet must not count as unhandled if an earlier emit throws.
            wave.catch(() => undefined);
            waves.push(wave);
          }
        };
        launch();
        for (let wave = waves.shift(); wave; wave = waves.shift()) {
          launch();
          for (const queue of await wave) {
            if (req.cancelled?.()) return;
            if (queue.count === 0) continue;
            produced++;
            await this.#emitServed(queue, req, emit);
          }
        }
      }
      if (budget() <= 0) return;
    }
  }

  async deleteQueue(crawl: string, key: string): Promise<number> {
    return runScript<number>(this.redis, script('uf-delete-queue'), this.#keys(crawl, key), [crawl, key]);
  }

  async deleteCrawl(crawl: string): Promise<number> {
    const removed = await inChunks(await this.queues(crawl), (key) => this.deleteQueue(crawl, key));
    return removed.reduce((a, b) => a + b, 0);
  }

  /** URLs not completed (scheduled or held) per crawl, per queue key; one pipeline, O(queues). */
  async backlog(crawl?: string): Promise<Record<string, Record<string, number>>> {
    const crawls = crawl !== undefined ? [crawl] : await this.crawls();
    const out: Record<string, Record<string, number>> = {};
    for (const c of crawls) {
      const keys = await this.queues(c);
      if (keys.length === 0) continue;
      const pipeline = this.redis.pipeline();
      for (const key of keys) {
        const q = urlFrontierQueueKeys(this.prefix, c, key);
        pipeline.zcard(q.sched).zcard(q.held);
      }
      const replies = (await pipeline.exec()) ?? [];
      const queues: Record<string, number> = {};
      keys.forEach((key, i) => {
        const [e1, sched] = replies[2 * i] ?? [];
        const [e2, held] = replies[2 * i + 1] ?? [];
        if (e1 || e2) throw e1 ?? e2;
        queues[key] = Number(sched) + Number(held);
      });
      out[c] = queues;
    }
    return out;
  }

  /**
   * The Kafka API's domain throttle override or blacklist, for the queues of `domain` (a queue's domain is its
   * key's registrable domain): `domain-update` sets `hits`/`window`/`scale`, `domain-remove` clears it,
   * `blacklist-update`/`-remove` stop and resume serving them.
   */
  async configureDomain(
    action: DomainAction,
    domain: string,
    limits: { hits?: number; window?: number; scale?: number } = {},
  ): Promise<void> {
    const g = urlFrontierGlobalKeys(this.prefix);
    switch (action) {
      case 'domain-update':
        await this.redis.hset(g.domainConfig, domain, `${limits.hits ?? 0},${limits.window ?? 0},${limits.scale ?? 1}`);
        return;
      case 'domain-remove':
        await this.redis.hdel(g.domainConfig, domain);
        return;
      case 'blacklist-update':
        await this.redis.sadd(g.blacklist, domain);
        return;
      case 'blacklist-remove':
        await this.redis.srem(g.blacklist, domain);
        return;
    }
  }

  async #queueStats(crawl: string, key: string, now: number): Promise<QueueStats> {
    const q = urlFrontierQueueKeys(this.prefix, crawl, key);
    const [sched, held, inProcess, completed] = await Promise.all([
      this.redis.zcard(q.sched),
      this.redis.zcard(q.held),
      this.redis.zcount(q.held, `(${now}`, '+inf'),
      this.redis.scard(q.done),
    ]);
    const size = sched + held;
    return { size, inProcess, completed, activeQueues: size > 0 ? 1 : 0, numberOfQueues: 1 };
  }

  /** Stats of one queue (all zero for an unknown one) or of every queue of a crawl. */
  async stats(crawl: string, key?: string): Promise<QueueStats> {
    const now = this.#now();
    const keys = key ? ((await this.hasQueue(crawl, key)) ? [key] : []) : await this.queues(crawl);
    const all = await inChunks(keys, (k) => this.#queueStats(crawl, k, now));
    return all.reduce(
      (a, b) => ({
        size: a.size + b.size,
        inProcess: a.inProcess + b.inProcess,
        completed: a.completed + b.completed,
        activeQueues: a.activeQueues + b.activeQueues,
        numberOfQueues: a.numberOfQueues + b.numberOfQueues,
      }),
      { size: 0, inProcess: 0, completed: 0, activeQueues: 0, numberOfQueues: 0 },
    );
  }

  /** Queue keys of a crawl, page `start`/`size` among the matching ones; active only unless `includeInactive`. */
  async listQueues(crawl: string, start: number, size: number, includeInactive: boolean): Promise<string[]> {
    const all = await this.queues(crawl);
    let matching = all;
    if (!includeInactive) {
      const now = this.#now();
      const flags = await inChunks(all, async (key) => {
        const q = urlFrontierQueueKeys(this.prefix, crawl, key);
        const [sched, held, blocked] = await Promise.all([
          this.redis.zcard(q.sched),
          this.redis.zcard(q.held),
          this.redis.hget(q.info, 'blocked'),
        ]);
        return sched + held > 0 && !(blocked !== null && Number(blocked) >= now);
      });
      matching = all.filter((_, i) => flags[i]);
    }
    return matching.slice(start, start + size);
  }

  /**
   * Every `created` field of a queue (member → value), read with HSCAN in pages of {@link SCAN_PAGE}: the admin
   * calls (ListURLs, CountURLs, PurgeURLs) never hold Redis for a whole queue in one command. HSCAN may repeat a
   * field; the caller gets each once per page it appears in, so it keeps a Map or re-checks.
   */
  async *#createdPages(createdKey: string): AsyncGenerator<[string, string][]> {
    let cursor = '0';
    do {
      const [next, flat] = await this.redis.hscan(createdKey, cursor, 'COUNT', SCAN_PAGE);
      cursor = next;
      const page: [string, string][] = [];
      for (let i = 0; i + 1 < flat.length; i += 2) page.push([flat[i] as string, flat[i + 1] as string]);
      if (page.length) yield page;
    } while (cursor !== '0');
  }

  /** The records of a queue's URLs (sorted by URL), optionally only those whose URL passes `filter`. */
  async #records(crawl: string, key: string, filter?: (url: string) => boolean): Promise<UrlRecord[]> {
    const q = urlFrontierQueueKeys(this.prefix, crawl, key);
    const created = new Map<string, string>();
    for await (const page of this.#createdPages(q.created))
      for (const [member, value] of page) if (!filter || filter(memberUrl(key, member))) created.set(member, value);
    const rows = [...created.keys()]
      .map((member) => ({ member, url: memberUrl(key, member) }))
      .sort((a, b) => (a.url < b.url ? -1 : a.url > b.url ? 1 : 0));
    const out: UrlRecord[] = [];
    for (let from = 0; from < rows.length; from += SCAN_PAGE) {
      const part = rows.slice(from, from + SCAN_PAGE);
      const members = part.map((r) => r.member);
      const [sched, hdate, done] = await Promise.all([
        this.redis.zmscore(q.sched, ...members),
        this.redis.hmget(q.hdate, ...members),
        this.redis.smismember(q.done, ...members),
      ]);
      part.forEach(({ member, url }, i) => {
        const c = splitCreated(created.get(member));
        out.push({
          crawl,
          key,
          url,
          metadata: parseMetadata(c.metadata),
          date: done[i] ? 0 : Number(sched[i] ?? hdate[i] ?? 0),
          created: c.created,
        });
      });
    }
    return out;
  }

  /** ListURLs: the URLs of a queue or crawl (completed included), paged among the filtered ones. */
  async listUrls(
    crawl: string,
    key: string | undefined,
    start: number,
    size: number,
    filter: ((url: string) => boolean) | undefined,
    emit: (r: UrlRecord) => void | Promise<void>,
  ): Promise<void> {
    const keys = key ? ((await this.hasQueue(crawl, key)) ? [key] : []) : await this.queues(crawl);
    let skip = start;
    let left = size;
    for (const k of keys) {
      if (left <= 0) return;
      const records = await this.#records(crawl, k, filter);
      for (const r of records) {
        if (skip > 0) {
          skip--;
          continue;
        }
        if (left-- <= 0) return;
        await emit(r);
      }
    }
  }

  /** CountURLs: URLs (active and completed) of a queue or crawl, optionally filtered. */
  async countUrls(crawl: string, key: string | undefined, filter?: (url: string) => boolean): Promise<number> {
    const keys = key ? ((await this.hasQueue(crawl, key)) ? [key] : []) : await this.queues(crawl);
    let n = 0;
    for (const k of keys) {
      const q = urlFrontierQueueKeys(this.prefix, crawl, k);
      if (!filter) {
        n += await this.redis.hlen(q.created);
        continue;
      }
      const matching = new Set<string>();
      for await (const page of this.#createdPages(q.created))
        for (const [member] of page) if (filter(memberUrl(k, member))) matching.add(member);
      n += matching.size;
    }
    return n;
  }

  /** One URL's record, or undefined when the queue does not know it. */
  async urlStatus(crawl: string, key: string, url: string): Promise<UrlRecord | undefined> {
    const q = urlFrontierQueueKeys(this.prefix, crawl, key);
    const member = urlMember(key, url);
    const value = await this.redis.hget(q.created, member);
    if (value === null) return undefined;
    const { created, metadata } = splitCreated(value);
    const [sched, hdate, done] = await Promise.all([
      this.redis.zscore(q.sched, member),
      this.redis.hget(q.hdate, member),
      this.redis.sismember(q.done, member),
    ]);
    return {
      crawl,
      key,
      url,
      metadata: done ? {} : parseMetadata(metadata),
      date: done ? 0 : Number(sched ?? hdate ?? 0),
      created,
    };
  }

  /** PurgeURLs: deletes URLs created more than `days` days ago (0: before now). */
  async purge(crawl: string, key: string | undefined, days: number): Promise<number> {
    const cutoff = Math.floor(this.#now() / 1000) - days * 86_400 + (days === 0 ? 1 : 0);
    const keys = key ? ((await this.hasQueue(crawl, key)) ? [key] : []) : await this.queues(crawl);
    let n = 0;
    for (const k of keys) {
      const q = urlFrontierQueueKeys(this.prefix, crawl, k);
      // A page at a time: the old members of each page go to one script call, which checks each date again.
      for await (const page of this.#createdPages(q.created)) {
        const old = page.filter(([, value]) => splitCreated(value).created < cutoff).map(([member]) => member);
        if (old.length)
          n += await runScript<number>(this.redis, script('uf-purge'), this.#keys(crawl, k), [
            crawl,
            k,
            cutoff,
            ...old,
          ]);
      }
    }
    return n;
  }

  /** SetDelay: the default (no key) or one queue's politeness delay in seconds; unknown queue: no-op. */
  async setDelay(crawl: string, key: string, seconds: number): Promise<void> {
    if (key === '') {
      await this.redis.hset(urlFrontierGlobalKeys(this.prefix).state, 'delay', seconds);
      return;
    }
    if (await this.hasQueue(crawl, key)) await this.#setAndWake(crawl, key, 'delay', seconds);
  }

  /**
   * Sets a queue's info field, then makes the queue due now: a shorter delay, an ended block or a higher limit may let
   * it produce before the time uf-serve gave it (or at all, if it had left `due`). uf-serve places it again on the
   * next GetURLs (out of `due` when it has nothing).
   */
  async #setAndWake(crawl: string, key: string, field: string, value: number): Promise<void> {
    await this.redis
      .multi()
      .hset(urlFrontierQueueKeys(this.prefix, crawl, key).info, field, value)
      .zadd(urlFrontierCrawlKeys(this.prefix, crawl).due, this.#now(), key)
      .exec();
  }

  /** BlockQueueUntil: epoch s (0 unblocks); unknown queue: no-op. */
  async blockQueueUntil(crawl: string, key: string, epochSeconds: number): Promise<void> {
    if (await this.hasQueue(crawl, key)) await this.#setAndWake(crawl, key, 'blocked', epochSeconds * 1000);
  }

  /** SetCrawlLimit: false when the queue is unknown. */
  async setCrawlLimit(crawl: string, key: string, limit: number): Promise<boolean> {
    if (!(await this.hasQueue(crawl, key))) return false;
    await this.#setAndWake(crawl, key, 'limit', limit);
    return true;
  }

  async setActive(state: boolean): Promise<void> {
    await this.redis.hset(urlFrontierGlobalKeys(this.prefix).state, 'active', state ? 1 : 0);
  }

  async active(): Promise<boolean> {
    return (await this.redis.hget(urlFrontierGlobalKeys(this.prefix).state, 'active')) !== '0';
  }

  /** Every key name this store may have created (for tests' cleanup; never used in production paths). */
  async knownKeys(): Promise<string[]> {
    const g = urlFrontierGlobalKeys(this.prefix);
    const out: string[] = [g.crawls, g.state, g.domainConfig, g.blacklist];
    for (const crawl of await this.crawls()) {
      out.push(...Object.values(urlFrontierCrawlKeys(this.prefix, crawl)));
      for (const key of await this.queues(crawl))
        out.push(...Object.values(urlFrontierQueueKeys(this.prefix, crawl, key)));
    }
    return out;
  }
}

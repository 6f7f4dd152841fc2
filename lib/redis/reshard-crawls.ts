/**
 * The crawls of one throttle scope in a frontier move (`frontier reshard`, lib/redis/reshard.ts): their records read
 * from the old layout, registered in every partition of the new one with their totals, their page-cap counters set
 * by domain, and their dupefilters copied. Each step writes what the old layout says, as sets and maxima, never as
 * increments, so a move run again after dying part-way writes the same.
 */
import type { PartitionRef } from '../frontier-model.ts';
import type { FrontierCalls } from './frontier-calls.ts';
import { dupefilterKey, partitionIndex, partitionKeys } from './keys.ts';
import { refNumber } from './member.ts';
import { runScript, script } from './scripts.ts';

/** Fields per HSCAN page (crawl records, dupefilter buckets) and members per ZRANGE page. */
const PAGE = 200;
/**
 * Fingerprints per dupefilter-add.lua call: a page of HSCAN may hold a whole small dupefilter (Redis returns a compact
 * HASH in one page), so pages are cut to keep each call a few ms.
 */
const FINGERPRINTS_PER_CALL = 2000;
/** Crawls per reshard-register.lua call. */
const REGISTER_BATCH = 100;
/** Per-crawl counters in K.cidx score `ref number × 2^29 + count` (includes/frontier.lua CB). */
const CB = 2 ** 29;

/** A crawl as the old layout holds it, summed over the old partitions that hold it. */
export interface OldCrawl {
  key: string;
  appid: string;
  spider: string;
  /** Its settings JSON, as stored. */
  settings: string;
  expires: number;
  /** The lowest first sequence number of its records (8 base-62 digits, ordered as text). */
  first: string;
  /** Page cap (`domain_max_pages`; 0: none). */
  cap: number;
  done: number;
  failed: number;
  /** The latest K.finished score of its records (epoch ms; 0: in none). */
  finished: number;
  /** Its ref in each old partition that holds it, by partition number. */
  refs: Map<number, string>;
}

/** The crawls of a scope in the old layout, and per old partition each ref's crawl and first sequence number. */
export interface OldCrawls {
  crawls: Map<string, OldCrawl>;
  /** Partition number → ref → the crawl key and first sequence number of its record (includes/frontier.lua alive_in). */
  live: Map<number, Map<string, { key: string; first: string }>>;
}

/** Reads the crawl records of a scope's old partitions (`olds`: one spider type's; the records are the scope's). */
export async function readOldCrawls(calls: FrontierCalls, olds: readonly PartitionRef[]): Promise<OldCrawls> {
  const crawls = new Map<string, OldCrawl>();
  const live = new Map<number, Map<string, { key: string; first: string }>>();
  for (const p of olds) {
    const k = partitionKeys(p);
    const refs = new Map<string, { key: string; first: string }>();
    live.set(p.partition, refs);
    let cursor = '0';
    do {
      const [next, flat] = await calls.redis.hscanBuffer(k.crawlSettings, cursor, 'COUNT', PAGE);
      cursor = next.toString();
      const page: { ref: string; record: Buffer }[] = [];
      for (let i = 0; i + 1 < flat.length; i += 2)
        page.push({ ref: (flat[i] as Buffer).toString('latin1'), record: flat[i + 1] as Buffer });
      if (page.length === 0) continue;
      const fields = page.flatMap(({ ref }) => [`${ref}\0done`, `${ref}\0fail`, `${ref}\0maxp`]);
      const counts = await calls.redis.hmget(k.counts, ...fields);
      const finished = await calls.redis.zmscore(k.finished, ...page.map(({ ref }) => ref));
      page.forEach(({ ref, record }, i) => {
        // `<crawl key:16><first seq:8><spider>\0<settings JSON>` (keys.ts PartitionKeys.crawlSettings).
        const end = record.indexOf(0, 24);
        if (end < 0) return;
        const key = record.toString('latin1', 0, 16);
        const first = record.toString('latin1', 16, 24);
        refs.set(ref, { key, first });
        const settings = record.toString('utf8', end + 1);
        const c = crawls.get(key) ?? newCrawl(key, record.toString('utf8', 24, end), settings, first);
        crawls.set(key, c);
        if (first < c.first) c.first = first;
        c.done += Number(counts[i * 3] ?? 0);
        c.failed += Number(counts[i * 3 + 1] ?? 0);
        c.cap = Math.max(c.cap, Number(counts[i * 3 + 2] ?? 0));
        c.finished = Math.max(c.finished, Number(finished[i] ?? 0));
        c.refs.set(p.partition, ref);
      });
    } while (cursor !== '0');
  }
  return { crawls, live };
}

function newCrawl(key: string, spider: string, settings: string, first: string): OldCrawl {
  let appid = '';
  let expires = 0;
  try {
    const s = JSON.parse(settings) as { appid?: unknown; expires?: unknown };
    if (typeof s.appid === 'string') appid = s.appid;
    if (typeof s.expires === 'number') expires = s.expires;
  } catch {
    // A record whose settings do not decode keeps no app index entry (includes/frontier.lua app_member).
  }
  return { key, appid, spider, settings, expires, first, cap: 0, done: 0, failed: 0, finished: 0, refs: new Map() };
}

/**
 * Registers the crawls in each new partition (reshard-register.lua): the totals go to the first, 0 to the others.
 * A crawl is registered in every partition, so that each holds its dupefilter (its fingerprints carry no domain,
 * and a URL seen before must stay a duplicate whichever partition its domain now belongs to). `idle`: the K.finished
 * score of a crawl with nothing queued in a partition (epoch ms) when the old layout has none for it.
 */
export async function registerCrawls(
  calls: FrontierCalls,
  news: readonly PartitionRef[],
  crawls: readonly OldCrawl[],
  seqFloor: number,
  idle: number,
  now: number,
): Promise<number> {
  let registered = 0;
  // One call at least per partition, crawls or none: it raises the sequence counter.
  const batches: (readonly OldCrawl[])[] = [];
  for (let from = 0; from < crawls.length; from += REGISTER_BATCH)
    batches.push(crawls.slice(from, from + REGISTER_BATCH));
  if (batches.length === 0) batches.push([]);
  for (const q of news)
    for (const batch of batches) {
      const home = q.partition === 0;
      const args = batch.flatMap((c) => [
        c.key,
        c.appid,
        c.spider,
        c.settings,
        c.first,
        c.expires,
        c.cap,
        home ? c.done : 0,
        home ? c.failed : 0,
        c.finished > 0 ? c.finished : idle,
      ]);
      const dupes = batch.map((c) => dupefilterKey(q, c.key));
      registered += await calls.run<number>('reshard-register', q, dupes, [seqFloor, ...args], now);
    }
  return registered;
}

/** Sets the page-cap counters (pages ever queued per crawl and domain) in each domain's new partition. @returns how many */
export async function copyCaps(
  calls: FrontierCalls,
  olds: readonly PartitionRef[],
  news: readonly PartitionRef[],
  crawls: readonly OldCrawl[],
  now: number,
): Promise<number> {
  let copied = 0;
  for (const c of crawls) {
    if (c.cap <= 0) continue;
    for (const p of olds) {
      const ref = c.refs.get(p.partition);
      if (ref === undefined) continue;
      const base = refNumber(ref) * CB;
      const key = partitionKeys(p).crawlIndex;
      for (let offset = 0; ; offset += PAGE) {
        const flat = await calls.redis.zrangebyscore(key, base, base + CB - 1, 'WITHSCORES', 'LIMIT', offset, PAGE);
        const byPartition = new Map<number, (string | number)[]>();
        for (let i = 0; i + 1 < flat.length; i += 2) {
          // `<ref>\0<domain>` is a page-cap counter; `<ref>\0<domain>\0<pe>` counts queued requests (rebuilt as they move).
          const parts = (flat[i] as string).split('\0');
          if (parts.length !== 2) continue;
          const domain = parts[1] as string;
          const n = partitionIndex(domain, news.length);
          const group = byPartition.get(n) ?? [];
          group.push(1, domain, Number(flat[i + 1]) - base);
          byPartition.set(n, group);
        }
        for (const [n, group] of byPartition) {
          await calls.run('reshard-put', news[n] as PartitionRef, [], [1, c.key, 0, group.length / 3, ...group], now);
          copied += group.length / 3;
        }
        if (flat.length < PAGE * 2) break;
      }
    }
  }
  return copied;
}

/**
 * Copies each crawl's dupefilters (the union of its old partitions') into its dupefilter in every new partition
 * (dupefilter-add.lua), a page of buckets at a time, keeping the longest time to live. `copied` is told the
 * fingerprints of each page once they are in every new partition.
 */
export async function copyDupefilters(
  calls: FrontierCalls,
  olds: readonly PartitionRef[],
  news: readonly PartitionRef[],
  crawls: readonly OldCrawl[],
  copied: (fingerprints: number) => Promise<void>,
): Promise<void> {
  const add = script('dupefilter-add');
  for (const c of crawls) {
    for (const p of olds) {
      if (!c.refs.has(p.partition)) continue;
      const key = dupefilterKey(p, c.key);
      const ttl = await calls.redis.pttl(key);
      if (ttl === -2) continue;
      const ttlMs = ttl > 0 ? ttl : calls.options.dupefilterTtlSec * 1000;
      let cursor = '0';
      do {
        const [next, flat] = await calls.redis.hscanBuffer(key, cursor, 'COUNT', PAGE);
        cursor = next.toString();
        const fingerprints = bucketFingerprints(flat);
        if (fingerprints.length === 0) continue;
        for (let at = 0; at < fingerprints.length; at += FINGERPRINTS_PER_CALL * 8) {
          const chunk = fingerprints.subarray(at, at + FINGERPRINTS_PER_CALL * 8);
          // The new partitions in parallel: they may be on different shards.
          await Promise.all(news.map((q) => runScript(calls.redis, add, [dupefilterKey(q, c.key)], [ttlMs, chunk])));
        }
        await copied(fingerprints.length / 8);
      } while (cursor !== '0');
    }
  }
}

/**
 * The fingerprints in a page of dupefilter fields (HSCAN's flat field/value list), concatenated: a bucket's field is
 * its 2-byte number, whose first byte is every fingerprint's first byte (includes/dupefilter.lua), and its value the
 * other 7 bytes of each. Fields '' (the size) and 'g' (the token) are not buckets.
 */
function bucketFingerprints(flat: Buffer[]): Buffer {
  const parts: Buffer[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const field = flat[i] as Buffer;
    const value = flat[i + 1] as Buffer;
    if (field.length !== 2) continue;
    const out = Buffer.allocUnsafe((value.length / 7) * 8);
    for (let j = 0, o = 0; j + 7 <= value.length; j += 7, o += 8) {
      out[o] = field[0] as number;
      value.copy(out, o + 1, j, j + 7);
    }
    parts.push(out);
  }
  return Buffer.concat(parts);
}

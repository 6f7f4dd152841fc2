/**
 * A crawl over several frontier partitions (`FRONTIER_PARTITIONS` > 1; lib/redis/keys.ts): each partition keeps the
 * crawl's counters for its own domains, so "the crawl is complete" and its totals are sums over the partitions.
 * - An ack that leaves a crawl with nothing queued or leased in its partition (ack.lua's `complete`) is the crawl's
 *   completion only when every other partition has nothing queued or leased for it either; the totals are then the
 *   sums. Children are queued before their parent's ack, in whatever partition, so the last ack sees every partition
 *   empty; the partitions are read twice, as one read of each is no snapshot ({@link sumAndClaim}). Two partitions that
 *   empty at once may both see that: one notice is claimed with `SET NX` on the crawl's totals, which the two compute
 *   alike.
 * - A partition where the crawl completed is swept a dupefilter TTL later (sweep-finished.lua); while the crawl
 *   still has work in another partition, its records (counters, registration, dupefilter) must stay, so the sweep
 *   postpones those crawls first ({@link holdLiveElsewhere}).
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { failureCause } from '../errors.ts';
import type { AckResult, CrawlSettings, FrontierItem, PartitionRef } from '../frontier-model.ts';
import type { FrontierCalls } from './frontier-calls.ts';
import { completeClaimKey, crawlKey, partitionKeys } from './keys.ts';
import { runScript, script } from './scripts.ts';

/** How long the claim of a completion notice is kept (s): far longer than two acks of one moment apart. */
const COMPLETE_CLAIM_SEC = 3600;

/** Counters of a crawl in one partition; undefined where it has no record. */
interface Counts {
  queued: number;
  leased: number;
  done: number;
  failed: number;
}

/** crawl-counts.lua on partition `p` for `crawlKeys`, in their order. */
async function countsIn(calls: FrontierCalls, p: PartitionRef, crawlKeys: readonly string[]) {
  const k = partitionKeys(p);
  const flat = await runScript<number[]>(calls.redis, script('crawl-counts'), [k.crawlRefs, k.counts], [...crawlKeys]);
  return crawlKeys.map((_, i): Counts | undefined => {
    const [queued = -1, leased = 0, done = 0, failed = 0] = flat.slice(i * 4, i * 4 + 4).map(Number);
    return queued < 0 ? undefined : { queued, leased, done, failed };
  });
}

/**
 * How long {@link crawlWide} tries again while another partition's shard fails (ms): longer than a shard's failover to
 * its replica. The ack is stored by then; given up, the crawl's notice would be lost.
 */
const CRAWL_WIDE_RETRY_MS = 60_000;

/**
 * An ack's result as the whole crawl's: with one partition as it is; with several and `complete`, complete only if
 * no other partition has work of the crawl and this process claimed the notice, with the totals summed. The ack is
 * stored already, and when it left the crawl with no work at all no later ack will say so: reads and the claim that
 * fail on infrastructure (another partition's shard failing over) are tried again (100 ms doubling to 5 s, for up to
 * {@link CRAWL_WIDE_RETRY_MS}) rather than lose the notice.
 */
export async function crawlWide(
  calls: FrontierCalls,
  own: PartitionRef,
  crawl: Pick<CrawlSettings, 'appid' | 'crawlid'> | undefined,
  result: AckResult,
): Promise<AckResult> {
  if (!result.complete || calls.partitionsOf(own.spider).length === 1 || crawl === undefined) return result;
  const ck = crawlKey(crawl.appid, crawl.crawlid, own.spider);
  // Names this call's claim, so a claim whose reply was lost is known as its own when tried again.
  const token = randomBytes(8).toString('hex');
  const deadline = Date.now() + CRAWL_WIDE_RETRY_MS;
  for (let waitMs = 100; ; waitMs = Math.min(waitMs * 2, 5000)) {
    try {
      return await sumAndClaim(calls, own, ck, token, result);
    } catch (error) {
      if (failureCause(error) !== 'infrastructure' || Date.now() + waitMs > deadline) throw error;
      await sleep(waitMs);
    }
  }
}

/** Every partition's counters of crawl `ck`, own included, read one partition at a time. */
async function countsEverywhere(calls: FrontierCalls, own: PartitionRef, ck: string) {
  const out: (Counts | undefined)[] = [];
  for (const p of calls.partitionsOf(own.spider)) out.push((await countsIn(calls, p, [ck]))[0]);
  return out;
}

const live = (c: Counts | undefined) => c !== undefined && (c.queued > 0 || c.leased > 0);
const same = (a: Counts | undefined, b: Counts | undefined) =>
  a === b ||
  (a !== undefined &&
    b !== undefined &&
    a.queued === b.queued &&
    a.leased === b.leased &&
    a.done === b.done &&
    a.failed === b.failed);

/**
 * {@link crawlWide}'s check over every partition and its claim of the notice, once. The partitions are read one after
 * another, so one pass alone is no snapshot: a page leased in partition B may queue a child in partition A after A
 * was read and then be acked before B is read, and the pass would see an empty crawl that is not. So every partition
 * is read twice, and the crawl is complete only when both passes find it empty and no partition's counters changed
 * between its two reads: then some moment between the passes had no work anywhere, and a crawl with no work never
 * gets more (children are queued only by a leased parent). A change between the passes means another process acked or
 * leased after this ack; the ack that leaves the crawl empty sees two quiet passes and claims the notice.
 */
async function sumAndClaim(
  calls: FrontierCalls,
  own: PartitionRef,
  ck: string,
  token: string,
  result: AckResult,
): Promise<AckResult> {
  const first = await countsEverywhere(calls, own, ck);
  const second = first.some(live) ? first : await countsEverywhere(calls, own, ck);
  const sum = { queued: 0, leased: 0, done: 0, failed: 0 };
  for (const c of second) {
    if (c === undefined) continue;
    sum.queued += c.queued;
    sum.leased += c.leased;
    sum.done += c.done;
    sum.failed += c.failed;
  }
  if (second.some(live) || second.some((c, i) => !same(c, first[i]))) return { ...result, complete: false, ...sum };
  const claim = completeClaimKey(calls.options.prefix, ck, sum.done, sum.failed);
  const claimed =
    (await calls.redis.set(claim, token, 'EX', COMPLETE_CLAIM_SEC, 'NX')) === 'OK' ||
    (await calls.redis.get(claim)) === token;
  return { ...result, complete: claimed, ...sum };
}

/**
 * Before partition `p` is swept: its completed crawls due for sweeping (up to `limit`) that still have work queued or
 * leased in another partition get a dupefilter TTL more in `finished`, so their records outlive the crawl.
 * @returns how many were held
 */
export async function holdLiveElsewhere(calls: FrontierCalls, p: PartitionRef, now: number, limit: number) {
  const ps = calls.partitionsOf(p.spider);
  if (ps.length === 1) return 0;
  const k = partitionKeys(p);
  let held = 0;
  for (let offset = 0; ; ) {
    // Score 0: stopped crawls, whose records are gone already. Those held leave the range; the others stay in it.
    const refs = await calls.redis.zrangebyscore(k.finished, '(0', now, 'LIMIT', offset, limit);
    const n = await holdPage(calls, p, refs, now);
    held += n;
    offset += refs.length - n;
    if (refs.length < limit) return held;
  }
}

/** {@link holdLiveElsewhere} for one page of due refs of partition `p`. */
async function holdPage(calls: FrontierCalls, p: PartitionRef, refs: string[], now: number): Promise<number> {
  if (refs.length === 0) return 0;
  const ps = calls.partitionsOf(p.spider);
  const k = partitionKeys(p);
  const records = await calls.redis.hmgetBuffer(k.crawlSettings, ...refs);
  const keys: string[] = [];
  const refOf: string[] = [];
  records.forEach((r, i) => {
    if (r === null) return;
    keys.push(r.subarray(0, 16).toString('latin1'));
    refOf.push(refs[i] as string);
  });
  if (keys.length === 0) return 0;
  const live = new Set<number>();
  for (const q of ps) {
    if (q.partition === p.partition) continue;
    const counts = await countsIn(calls, q, keys);
    counts.forEach((c, i) => {
      if (c !== undefined && (c.queued > 0 || c.leased > 0)) live.add(i);
    });
  }
  const until = now + calls.options.dupefilterTtlSec * 1000;
  for (const i of live) await calls.redis.zadd(k.finished, 'XX', until, refOf[i] as string);
  return live.size;
}

/**
 * A crawl's settings from whichever partition of the spider type holds its record (undefined: none does): a child
 * refused as `unknown_crawl` in a partition where its live crawl has no record yet is queued again with them.
 */
async function settingsAnywhere(calls: FrontierCalls, spider: string, ck: string): Promise<CrawlSettings | undefined> {
  for (const p of calls.partitionsOf(spider)) {
    const k = partitionKeys(p);
    const ref = await calls.redis.hget(k.crawlRefs, ck);
    if (ref === null) continue;
    // `<crawl key:16><first seq:8><spider>\0<settings JSON>` (keys.ts PartitionKeys.crawlSettings).
    const record = await calls.redis.hgetBuffer(k.crawlSettings, ref);
    const end = record?.indexOf(0, 24) ?? -1;
    if (record && end >= 0) return JSON.parse(record.subarray(end + 1).toString('utf8')) as CrawlSettings;
  }
  return undefined;
}

/**
 * The children among `items` refused as `unknown_crawl` (with several partitions: their crawl had no record in their
 * domain's partition), with the settings of their crawl where another partition holds it, by index; the caller
 * queues them again.
 */
export async function unknownHere(
  calls: FrontierCalls,
  spider: string,
  items: readonly FrontierItem[],
  outcomes: readonly string[],
): Promise<Map<number, FrontierItem>> {
  const out = new Map<number, FrontierItem>();
  if (calls.partitionsOf(spider).length === 1) return out;
  const found = new Map<string, CrawlSettings | undefined>();
  for (let i = 0; i < items.length; i++) {
    const item = items[i] as FrontierItem;
    if (outcomes[i] !== 'unknown_crawl' || item.crawl.settings) continue;
    const ck = crawlKey(item.crawl.appid, item.crawl.crawlid, spider);
    if (!found.has(ck)) found.set(ck, await settingsAnywhere(calls, spider, ck));
    const settings = found.get(ck);
    if (settings) out.set(i, { ...item, crawl: { ...item.crawl, settings } });
  }
  return out;
}

/**
 * With several partitions, a batch's children of a crawl whose seed is in the same batch carry the seed's settings:
 * a child whose domain is in another partition than the seed's then registers the crawl there, as the seed does in
 * its own (with one partition the seed, stored first, registers it for them all).
 */
export function withSeedSettings(items: readonly FrontierItem[]): readonly FrontierItem[] {
  const seeds = new Map<string, CrawlSettings>();
  for (const { crawl } of items) if (crawl.settings) seeds.set(`${crawl.appid}\n${crawl.crawlid}`, crawl.settings);
  if (seeds.size === 0) return items;
  return items.map((item) => {
    if (item.crawl.settings) return item;
    const settings = seeds.get(`${item.crawl.appid}\n${item.crawl.crawlid}`);
    return settings ? { ...item, crawl: { ...item.crawl, settings } } : item;
  });
}

/**
 * Every Redis key crawl-cluster uses is built here, and nowhere else (docs/style.md §1), but for the URL Frontier
 * store's, which lib/redis/url-frontier/keys.ts builds on the same rules (its partitions placed by {@link spreadTag}).
 *
 * ## Sharding (hash tags) — read this before adding a key
 * ElastiCache in cluster mode (and Serverless, always cluster mode) runs a Lua script only when every key
 * it touches is declared in KEYS and all of them hash to one slot. So keys are grouped by the atomic steps
 * that use them together, and each group shares one hash tag:
 *
 * - **Frontier partition** `{<prefix>:f:<scope>:<n>}`: the queue, the domain schedule (ready / waiting),
 *   throttle state, domain config and blacklist, leases, crawl records and counters, the expiry index.
 *   Enqueue, lease, ack, release, retry, reclaim, stop and info are each one script inside one partition.
 *   `<scope>` is the spider type when throttles are per spider type (`SCHEDULER_TYPE_ENABLED`, the
 *   default), and `all` when the throttle is shared by every spider type: the throttle's scope decides the
 *   tag, because a throttle must live in the same slot as every queue it limits.
 *   `<n>` is the partition number. With `FRONTIER_PARTITIONS` = 1 (the default) each scope is one partition
 *   (`0`). With N > 1 each scope splits into N partitions, tagged `{<prefix>:f:<scope>:<n>/<N>[~<salt>]}`: a
 *   domain belongs to one by a stable hash of its name ({@link partitionIndex}), so its queue, throttle,
 *   config, dupefilter and leases stay in one slot, and every script stays single-slot. The salt places
 *   partition n's slot in the middle of the n-th N-th of the slot range ({@link spreadTag}): a cluster
 *   splits the slots into equal ranges per shard, so N partitions spread evenly over the shards (none left
 *   without one when N >= shards). Crawlers lease from the partitions in turn; cross-partition answers
 *   (info, stats, completion) are summed by the caller (docs/scale.md).
 * - **Per-crawl dupefilter** lives in the partition's slot too (same tag), but is one key per crawl so it
 *   can expire on its own (`DUPEFILTER_TIMEOUT`); the caller declares it in KEYS.
 * - **Stats** `{<prefix>:stats}`: time-bucketed counters and heartbeats, never touched together with the
 *   frontier, so one slot of their own.
 * - **URL Frontier store** `{<prefix>:uf}`, or with `FRONTIER_PARTITIONS` = N > 1 one tag per partition
 *   `{<prefix>:uf:<n>/<N>~<salt>}`: lib/redis/url-frontier/keys.ts.
 * - **Replies** `<prefix>:reply:<uuid>`: single-key reads and writes; no tag needed.
 * - **State markers** `<tag>:epoch`: one STRING per hash tag that holds crawl state (each frontier partition, the
 *   stats slot), in that tag's own slot, so a shard replaced alone loses its marker with its data
 *   (lib/redis/state-marker.ts; docs/design.md §12).
 *
 * Names inside a partition are short on purpose: they are repeated in every command.
 */
import { createHash } from 'node:crypto';
import calculateSlot from 'cluster-key-slot';
import type { PartitionRef } from '../frontier-model.ts';

/** The fixed keys of one frontier partition, in the order every script declares them. */
export interface PartitionKeys {
  /**
   * ZSET, all scores 0, lexicographic: `<domain>\0<prio><seq><ref><depth><retries><tail>` — every queued
   * request (format: scripts/includes/frontier.lua, member.ts).
   */
  queue: string;
  /** ZSET domain → score of its best queued request; domains with work whose throttle allows a fetch now. */
  ready: string;
  /** ZSET domain → epoch ms when its throttle next allows a fetch. */
  waiting: string;
  /** ZSET request → epoch ms: retries held back until their backoff delay passes. */
  delayed: string;
  /** ZSET request → lease deadline (epoch ms): leased requests. */
  leases: string;
  /** HASH throttle key → state (last fetch ms, or the recent fetch times in burst mode). */
  throttle: string;
  /** HASH domain → `hits,window,scale` overrides. */
  domainConfig: string;
  /** SET of blacklisted domains: their requests stay queued but are never leased. */
  blacklist: string;
  /** STRING counter: request sequence numbers (FIFO). */
  seq: string;
  /** HASH `<crawl key>` → crawl ref (the live registration of a crawl); field `#`: the last ref handed out. */
  crawlRefs: string;
  /** HASH crawl ref → `<crawl key:16><first seq:8><spider>\0<settings JSON>`, stored once per crawl. */
  crawlSettings: string;
  /** HASH per-crawl counters: `<ref>\0q` queued, `<ref>\0l` leased, `<ref>\0done`, `<ref>\0fail`, `<ref>\0maxp` page cap. */
  counts: string;
  /**
   * ZSET of per-crawl, per-domain counters, score = ref number × 2^29 + count: `<ref>\0<domain>\0<prio>`
   * queued, `<ref>\0<domain>` pages ever queued (page cap). A crawl's counters are one score range, so info
   * reads them and stop drops them with one command each, never scanning the queue.
   */
  crawlIndex: string;
  /** ZSET, lexicographic: `<spider>\0<appid>\0<ref>` — the crawls of an app, per spider type. */
  appIndex: string;
  /** HASH domain → queued count: HLEN is the domain count; stats page through it (HSCAN) for the busiest. */
  domainCounts: string;
  /** ZSET crawl ref → `expires` (epoch s), only crawls that expire. */
  expiry: string;
  /** ZSET `<crawl key>` → epoch ms until which it stays stopped (late children refused). */
  stopped: string;
  /**
   * ZSET crawl ref → epoch ms after which a completed crawl's records (settings, ref, app index entry,
   * counters) are dropped by `sweepFinished`: completion + the dupefilter TTL. New work for the crawl
   * takes it out again.
   */
  finished: string;
  /**
   * STRING: the partition's queued requests of the spider type in total, kept equal to the sum of
   * {@link domainCounts} by every script that changes it, so stats read the backlog in O(1) (`Frontier.queueSummary`).
   * A partition written before it existed has none until the first stats read adds it up (backlog-total.lua).
   */
  queuedTotal: string;
}

/** Redis Cluster's hash slots. */
const SLOTS = 16384;
/** Most partitions a scope may split into (`FRONTIER_PARTITIONS`'s maximum in lib/config/variables.ts). */
export const MAX_PARTITIONS = 256;

/** Spread tags found, by their unsalted name (finding one takes about 5 `count` slot computations). */
const tags = new Map<string, string>();

/**
 * The hash tag `{<name>~<salt>}` of part `index` of `count` parts of a store, with the first salt that puts the tag's
 * slot within the middle fifth of the `index`-th `count`-th of the slots: `count` parts sit one per equal slot range,
 * as a cluster's shards own them, so they spread evenly over the shards (none left without one when `count` >=
 * shards). The crawl frontier's partitions ({@link partitionTag}) and the URL Frontier store's
 * (lib/redis/url-frontier/keys.ts) are placed so.
 */
export function spreadTag(name: string, index: number, count: number): string {
  let tag = tags.get(name);
  if (tag === undefined) {
    const width = SLOTS / count;
    const lo = (index + 0.4) * width;
    const hi = (index + 0.6) * width;
    for (let salt = 0; ; salt++) {
      const slot = calculateSlot(`${name}~${salt}`);
      if (slot >= lo && slot < hi) {
        tag = `{${name}~${salt}}`;
        break;
      }
    }
    if (tags.size < 10_000) tags.set(name, tag);
  }
  return tag;
}

/**
 * The hash tag of a partition. One partition: `{<prefix>:f:<scope>:0}`, as before partitions existed. N > 1:
 * `{<prefix>:f:<scope>:<n>/<N>~<salt>}`, placed by {@link spreadTag}.
 */
export function partitionTag(p: PartitionRef): string {
  const count = p.count ?? 1;
  if (count <= 1) return `{${p.prefix}:f:${p.scope}:${p.partition}}`;
  return spreadTag(`${p.prefix}:f:${p.scope}:${p.partition}/${count}`, p.partition, count);
}

/**
 * The partition (0..count-1) of a domain: FNV-1a over its name, reduced by jump consistent hashing (Lamping and
 * Veach), so the same domain always lands in the same partition for a given count, on every process and language.
 */
export function partitionIndex(domain: string, count: number): number {
  if (count <= 1) return 0;
  let h = 0x811c9dc5;
  for (let i = 0; i < domain.length; i++) {
    h ^= domain.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  // Jump consistent hash over a 32-bit key: a linear congruential walk whose jumps land in [0, count).
  let key = BigInt(h);
  let b = -1;
  let j = 0;
  while (j < count) {
    b = j;
    key = (key * 2862933555777941757n + 1n) & 0xffffffffffffffffn;
    j = Math.floor(((b + 1) * 2 ** 31) / Number((key >> 33n) + 1n));
  }
  return b;
}

/** The fixed keys of a partition. */
export function partitionKeys(p: PartitionRef): PartitionKeys {
  const t = partitionTag(p);
  const s = p.spider;
  return {
    queue: `${t}:q:${s}`,
    ready: `${t}:ready:${s}`,
    waiting: `${t}:wait:${s}`,
    delayed: `${t}:delay:${s}`,
    leases: `${t}:lease:${s}`,
    throttle: `${t}:thr`,
    domainConfig: `${t}:dcfg`,
    blacklist: `${t}:black`,
    seq: `${t}:seq`,
    crawlRefs: `${t}:crawls`,
    crawlSettings: `${t}:settings`,
    counts: `${t}:counts`,
    crawlIndex: `${t}:cidx`,
    appIndex: `${t}:apps`,
    domainCounts: `${t}:dcount:${s}`,
    expiry: `${t}:expiry`,
    stopped: `${t}:stopped`,
    finished: `${t}:finished`,
    queuedTotal: `${t}:qn:${s}`,
  };
}

/** The fixed keys as a list, in declaration order (the order of {@link PartitionKeys}). */
export function partitionKeyList(p: PartitionRef): string[] {
  return Object.values(partitionKeys(p));
}

/**
 * A crawl's identity inside Redis: 16 hex chars of SHA-1 over spider type, appid and crawlid. Deterministic,
 * so the caller can name the crawl's own keys (its dupefilter) without a round trip. The spider type is part
 * of it because spider types can share a partition (`SCHEDULER_TYPE_ENABLED=false`): two spider types'
 * crawls with the same appid/crawlid are different crawls (own settings, dupefilter, counters, stop).
 */
export function crawlKey(appid: string, crawlid: string, spider: string): string {
  return createHash('sha1')
    .update(spider)
    .update('\n')
    .update(appid)
    .update('\n')
    .update(crawlid)
    .digest('hex')
    .slice(0, 16);
}

/**
 * The exact set of 8-byte request fingerprints already seen in a crawl, as a HASH: field = a fingerprint's
 * first 2 bytes, value = the concatenated 6-byte rests of the fingerprints with that prefix (enqueue.lua).
 * Expires `DUPEFILTER_TIMEOUT` after last use.
 */
export function dupefilterKey(p: PartitionRef, crawl: string): string {
  return `${partitionTag(p)}:df:${crawl}`;
}

/** The throttle scope for a spider type under the `SCHEDULER_TYPE_ENABLED` setting. */
function throttleScope(spider: string, typeEnabled: boolean): string {
  return typeEnabled ? spider : 'all';
}

/** The partitions of a spider type (`count`: `FRONTIER_PARTITIONS`; see the sharding note above). */
export function spiderPartitions(prefix: string, spider: string, typeEnabled: boolean, count = 1): PartitionRef[] {
  const scope = throttleScope(spider, typeEnabled);
  if (count <= 1) return [{ prefix, scope, partition: 0, spider }];
  return Array.from({ length: count }, (_, partition) => ({ prefix, scope, partition, spider, count }));
}

/**
 * The claim of a crawl's completion notice over several partitions (lib/redis/partition-sums.ts): one STRING per
 * crawl and totals, set with NX by the process that announces it. Single-key: no tag needed.
 */
export function completeClaimKey(prefix: string, crawl: string, done: number, failed: number): string {
  return `${prefix}:complete:${crawl}:${done}:${failed}`;
}

/** The stats hash tag. */
export function statsTag(prefix: string): string {
  return `{${prefix}:stats}`;
}

/** HASH of time-bucketed counts for one counter name (e.g. `kafka-monitor:total`). */
export function statsCounterKey(prefix: string, name: string): string {
  return `${statsTag(prefix)}:c:${name}`;
}

/** SET of the counter names that exist, so stats read them without scanning the keyspace. */
export function statsRegistryKey(prefix: string): string {
  return `${statsTag(prefix)}:names`;
}

/** ZSET `<kind>\0<name>` → last heartbeat (epoch ms): live crawlers and monitors. */
export function heartbeatKey(prefix: string): string {
  return `${statsTag(prefix)}:hb`;
}

/**
 * STRING: the report a heartbeat carries (a crawler process's load, JSON), with the heartbeat TTL; read by id for the
 * live members only (MGET, one slot), never listed.
 */
export function heartbeatReportKey(prefix: string, kind: string, id: string): string {
  return `${statsTag(prefix)}:hbr:${kind}\0${id}`;
}

/**
 * LIST of the latest failed pages of one crawl (JSON, newest first, capped and with a TTL): why its pages failed,
 * for the dashboard (lib/redis/failure-log.ts). In the stats slot: never touched together with the frontier.
 */
export function failureLogKey(prefix: string, spiderid: string, appid: string, crawlid: string): string {
  return `${statsTag(prefix)}:fail:${spiderid}\0${appid}\0${crawlid}`;
}

/**
 * STRING: the state marker of one hash tag (`tag` with its braces, e.g. {@link partitionTag} or {@link statsTag}):
 * an epoch id written once, when the slot's state is first created, and never deleted or expired. Its own slot's
 * data and the marker go together, so a marker that vanished or changed means that slot was emptied since
 * (lib/redis/state-marker.ts).
 */
export function stateMarkerKey(tag: string): string {
  return `${tag}:epoch`;
}

/**
 * HASH: the record of lost frontier state (lib/redis/state-marker.ts): one field per hash tag whose marker vanished,
 * `lost:<tag>` → JSON, and `acked` → epoch ms of the operator's acknowledgement. In the stats slot.
 */
export function stateLossKey(prefix: string): string {
  return `${statsTag(prefix)}:lost`;
}

/** HASH: the replies stored under a request uuid for REST, one field per appid (reply-put.lua; with a TTL). */
export function replyKey(prefix: string, uuid: string): string {
  return `${prefix}:reply:${uuid}`;
}

/** STRING: robots.txt of a host, cached for the fleet (with a TTL). */
export function robotsKey(prefix: string, origin: string): string {
  return `${prefix}:robots:${origin}`;
}

/** SET of the spider types that have ever had work queued, so periodic jobs find every frontier without scans. */
export function spidersKey(prefix: string): string {
  return `${prefix}:spiders`;
}

/**
 * STRING: the partitions per scope the frontier under this prefix is laid out in (`FRONTIER_PARTITIONS`): recorded by
 * the first process that uses the frontier and by `frontier reshard` when a move ends (lib/redis/partition-count.ts).
 */
export function partitionCountKey(prefix: string): string {
  return `${prefix}:partitions`;
}

/**
 * HASH: a frontier move between partition layouts under way (`crawl-cluster frontier reshard`, lib/redis/reshard.ts):
 * `from` and `to` (partitions per scope), `phase` (`copy`, then `delete` once everything is in the new layout) and
 * `started` (epoch ms). Present only while a move is unfinished, so another run finishes the same move.
 */
export function reshardKey(prefix: string): string {
  return `${prefix}:reshard`;
}

/**
 * HASH spider type → epoch ms of the last time a crawler registered it (with its heartbeat): the types the fleet
 * serves or has served, so the kafka-monitor can accept plugin spider types it cannot load itself. Never trimmed:
 * only crawlers write it, one field per spider type.
 */
export function spiderTypesKey(prefix: string): string {
  return `${prefix}:spider-types`;
}

/**
 * HASH proxy group name → epoch ms of the last time a crawler registered it (with its heartbeat): the groups of
 * CRAWLER_PROXY_GROUPS the fleet has or had (names only, never proxies), so the kafka-monitor can check a crawl's
 * `attrs.proxy`. Never trimmed: only crawlers write it, one field per group.
 */
export function proxyGroupsKey(prefix: string): string {
  return `${prefix}:proxy-groups`;
}

/**
 * STRING: epoch ms of the last request rejected for naming a spider type or proxy group no crawler has registered,
 * kept for lib/monitor/fleet-wake.ts `FLEET_WAKE_MS` (it expires then): while it stands and no crawler task runs,
 * the fleet is sized to one task, so that the task can register what it has (a fleet scaled to zero registers
 * nothing).
 */
export function fleetWakeKey(prefix: string): string {
  return `${prefix}:fleet-wake`;
}

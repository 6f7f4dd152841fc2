/**
 * The URL Frontier store's Redis keys (lib/redis/url-frontier/store.ts), built here and nowhere else (docs/style.md
 * §1; the rest of crawl-cluster's in lib/redis/keys.ts).
 *
 * ## Partitions (hash tags)
 * A prefix's URL frontier is `FRONTIER_PARTITIONS` partitions, one hash tag each. One partition (the default):
 * `{<prefix>:uf}`, every crawl, queue and URL in one slot. N > 1: `{<prefix>:uf:<n>/<N>~<salt>}`, placed as the crawl
 * frontier's partitions are (lib/redis/keys.ts `spreadTag`: one per equal slot range, so evenly over the shards).
 * A queue (crawl ID, queue key) belongs to partition `partitionIndex(<queue key>, N)` (lib/redis/keys.ts): the key
 * itself, not its registrable domain, so a queue's place is a function of what the client sent alone (no public
 * suffix list, which a library update changes, can move it), and the hosts of one site spread over the partitions
 * (nothing here needs a domain's queues together: a domain override or blacklist entry acts on each queue alone).
 * Each partition is a whole URL frontier of its own: the crawls with a queue there, those queues and their URLs, its
 * own index of due queues and backlog total, and a copy of the frontier-wide settings (the active flag, the default
 * delay, the domain overrides and blacklist), which the store writes to every partition. So every script runs in one
 * partition's slot, as with one partition, and the store answers over the partitions (lib/redis/url-frontier/store.ts).
 *
 * Crawl IDs and queue keys are URI-encoded into the names, so `:` inside them cannot collide.
 */
import { partitionIndex, spreadTag } from '../keys.ts';

/** One partition of a prefix's URL frontier: with `count` 1, the whole frontier. */
export interface UrlFrontierPartition {
  prefix: string;
  /** 0 .. count - 1 */
  partition: number;
  /** How many partitions the frontier has (`FRONTIER_PARTITIONS`). */
  count: number;
}

/** Partitions of one URL frontier, in order: at least one. */
export type UrlFrontierPartitions = readonly [UrlFrontierPartition, ...UrlFrontierPartition[]];

/** The partitions of a prefix's URL frontier (`count`: `FRONTIER_PARTITIONS`). */
export function urlFrontierPartitions(prefix: string, count = 1): UrlFrontierPartitions {
  const n = Math.max(1, Math.floor(count));
  const first: UrlFrontierPartition = { prefix, partition: 0, count: n };
  return [first, ...Array.from({ length: n - 1 }, (_, i) => ({ prefix, partition: i + 1, count: n }))];
}

/** The partition (0 .. count - 1) that holds the queues with key `key`, of every crawl. */
export function urlFrontierPartitionIndex(key: string, count: number): number {
  return partitionIndex(key, count);
}

/** The hash tag of a partition: `{<prefix>:uf}` alone, `{<prefix>:uf:<n>/<N>~<salt>}` among N. */
export function urlFrontierTag(p: UrlFrontierPartition): string {
  if (p.count <= 1) return `{${p.prefix}:uf}`;
  return spreadTag(`${p.prefix}:uf:${p.partition}/${p.count}`, p.partition, p.count);
}

/** The frontier-wide keys of a URL frontier (of one partition: each has its own). */
export interface UrlFrontierGlobalKeys {
  /** SET of crawl IDs that have at least one queue. */
  crawls: string;
  /**
   * HASH `active` (1/0), `delay` (default politeness, s), `backlog` (URLs scheduled or held in the counted queues:
   * see the queue info's `counted`), `indexed` (2 once every due queue is in `queueDue` and every queue counted;
   * 1 in a frontier that had only `legacyCrawlDue`),
   * `icursor` (the SSCAN cursor of the walk that indexes an older frontier, scripts/uf-index.lua); `seq` (the old
   * rotation's counter) in older frontiers; `fence` (a message) while `frontier reshard` moves the frontier to another
   * partition count, in the partitions of both counts, and after it in those of the old count, which it leaves holding
   * nothing else (lib/redis/url-frontier/reshard.ts): the scripts that write refuse with it (scripts/includes/uf.lua).
   */
  state: string;
  /**
   * ZSET queue member (lib/redis/url-frontier/model.ts `queueMember`: crawl ID and queue key) → epoch ms from which
   * the queue may produce: every crawl's `due` in one index, which GetURLs over every crawl claims from
   * (scripts/uf-claim.lua), so its cost does not grow with the crawls or queues that have nothing due. Every script
   * that places a queue in its crawl's `due` places it here too (or takes it out of both).
   */
  queueDue: string;
  /** ZSET crawl ID → earliest due time: the index over crawls before `queueDue` (legacy; the walk deletes it). */
  legacyCrawlDue: string;
  /** HASH domain → `hits,window,scale`: the Kafka API's domain throttle overrides, for the queues of that domain. */
  domainConfig: string;
  /** SET of domains blacklisted through the Kafka API: their queues keep their URLs but are never served. */
  blacklist: string;
  /**
   * ZSET → epoch ms: when the holds of every queue end, which GetURLs releases from (scripts/uf-release.lua,
   * holds.ts). Its members: `b:<t>` → t for the bucket of the holds GetURLs made that end at t (a LIST,
   * {@link urlFrontierHoldBucket}: one RPUSH per serve call, not a sorted insert per URL), and a hold member itself
   * (crawl ID and queue key, each after its byte length, then the URL's member: scripts/includes/uf.lua
   * hold_prefix) → its end, for a hold moved from an older version's keys or by `frontier reshard`. A hold is also
   * a field of its queue's info, which says whether the URL is held (see the queue keys' `info`): an entry whose
   * field is gone (its queue deleted, its URL completed) or ends later (held again since) is dropped when read.
   */
  holds: string;
}

export function urlFrontierGlobalKeys(p: UrlFrontierPartition): UrlFrontierGlobalKeys {
  const t = urlFrontierTag(p);
  return {
    crawls: `${t}:crawls`,
    state: `${t}:state`,
    queueDue: `${t}:qdue`,
    legacyCrawlDue: `${t}:cdue`,
    domainConfig: `${t}:dcfg`,
    blacklist: `${t}:black`,
    holds: `${t}:holds`,
  };
}

/** The bucket (a LIST of hold members) of the holds that end at `until` (epoch ms; see `holds`). */
export function urlFrontierHoldBucket(p: UrlFrontierPartition, until: number): string {
  return `${urlFrontierTag(p)}:hold:${until}`;
}

/** The keys of one crawl of a URL frontier. */
export interface UrlFrontierCrawlKeys {
  /** ZSET, all scores 0: the crawl's queue keys in lexicographic order (ListQueues pages over it). */
  queues: string;
  /**
   * ZSET queue key → epoch ms from which the queue may produce: GetURLs without a key looks only at the queues whose
   * time has come (scripts/uf-claim.lua), so its cost does not grow with the queues that have nothing due. A queue
   * with nothing scheduled or held is not in it (scripts/uf-serve.lua).
   */
  due: string;
  /** ZSET of frontiers stored before `due` existed (the old round-robin rotation), migrated and deleted by uf-claim. */
  legacyRotation: string;
}

export function urlFrontierCrawlKeys(p: UrlFrontierPartition, crawl: string): UrlFrontierCrawlKeys {
  const t = urlFrontierTag(p);
  const c = encodeURIComponent(crawl);
  return { queues: `${t}:c:${c}:queues`, due: `${t}:c:${c}:due`, legacyRotation: `${t}:c:${c}:rot` };
}

/** The keys of one queue (crawl, key) of a URL frontier. */
export interface UrlFrontierQueueKeys {
  /**
   * HASH url → `<creation date (epoch s)>[\t<metadata JSON>]` (`{name: [values]}`, left out when empty): every URL
   * of the queue, active or completed. One field per URL for both, to keep Redis memory per URL low. In every key
   * of a queue a URL is its member form (lib/redis/url-frontier/model.ts `urlMember`: the `http(s)://<queue key>`
   * prefix replaced by one byte).
   */
  created: string;
  /** ZSET url → next-fetch date (epoch s): scheduled URLs that are not held. */
  sched: string;
  /**
   * ZSET url → held until (epoch ms): URLs handed out by GetURLs before holds were kept in `info` and the frontier's
   * `holds` (legacy: uf-serve moves them there the next time it serves the queue).
   */
  held: string;
  /** HASH url → next-fetch date of a URL in `held` (legacy, as `held`). */
  hdate: string;
  /** SET of completed URLs. */
  done: string;
  /**
   * HASH `delay` (s), `blocked` (epoch ms), `limit`, `last` (last produced, epoch ms), `dom` (the queue key's
   * registrable domain, which domain overrides and the blacklist name), `meta` (1 once any URL of the queue was
   * stored with metadata: GetURLs reads metadata only then), `counted` (1 once the queue's URLs scheduled or held are
   * in the frontier's `backlog` total: from its creation, or, in a frontier stored before the total existed, from
   * the walk of scripts/uf-index.lua), `held` (how many of its URLs are held), `v` (2 once none of its holds is in
   * the legacy `held`), and per URL held by GetURLs a field `h:<url>` → `<next-fetch date (s)>,<held until (ms)>`
   * (no other field has a `:`), with its entry in the frontier's `holds`.
   */
  info: string;
}

export function urlFrontierQueueKeys(p: UrlFrontierPartition, crawl: string, key: string): UrlFrontierQueueKeys {
  const q = `${urlFrontierTag(p)}:q:${encodeURIComponent(crawl)}:${encodeURIComponent(key)}`;
  return {
    created: `${q}:created`,
    sched: `${q}:sched`,
    held: `${q}:held`,
    hdate: `${q}:hdate`,
    done: `${q}:done`,
    info: `${q}:info`,
  };
}

/** The frontier-wide KEYS every URL frontier script over queues starts with (scripts/includes/uf.lua), in order. */
export function urlFrontierScriptGlobals(p: UrlFrontierPartition): string[] {
  const g = urlFrontierGlobalKeys(p);
  return [g.crawls, g.state, g.domainConfig, g.blacklist, g.queueDue, g.holds];
}

/**
 * One crawl's group of KEYS in a URL frontier script (scripts/includes/uf.lua): its queues and due, then each queue's
 * six keys (created, sched, held, hdate, done, info). All in one hash tag, so one call may take any number of crawls
 * and queues.
 */
export function urlFrontierCrawlGroup(p: UrlFrontierPartition, crawl: string, queues: readonly string[]): string[] {
  const c = urlFrontierCrawlKeys(p, crawl);
  const out = [c.queues, c.due];
  for (const key of queues) {
    const q = urlFrontierQueueKeys(p, crawl, key);
    out.push(q.created, q.sched, q.held, q.hdate, q.done, q.info);
  }
  return out;
}

/**
 * The KEYS of scripts/uf-serve.lua: the frontier-wide keys ({@link urlFrontierScriptGlobals}), the bucket of the holds
 * it makes (those ending at `until`: {@link urlFrontierHoldBucket}), then per crawl its
 * due (unless `qdueOnly`: queues claimed from `qdue` are placed there alone) and per queue its sched and info, and
 * with `full` its created, done, held and hdate too (the keys a queue with metadata, a crawl limit or legacy holds
 * needs; the others are served with two, which is less to send and to parse).
 */
export function urlFrontierServeKeys(
  p: UrlFrontierPartition,
  groups: readonly { crawl: string; keys: readonly string[] }[],
  full: boolean,
  until: number,
  qdueOnly = false,
): string[] {
  const t = urlFrontierTag(p);
  const out = urlFrontierScriptGlobals(p);
  out.push(urlFrontierHoldBucket(p, until));
  for (const { crawl, keys } of groups) {
    const c = encodeURIComponent(crawl);
    if (!qdueOnly) out.push(`${t}:c:${c}:due`);
    for (const key of keys) {
      // As urlFrontierQueueKeys names them.
      const q = `${t}:q:${c}:${encodeURIComponent(key)}`;
      out.push(`${q}:sched`, `${q}:info`);
      if (full) out.push(`${q}:created`, `${q}:done`, `${q}:held`, `${q}:hdate`);
    }
  }
  return out;
}

/**
 * The KEYS of a URL frontier script over queues of one crawl (scripts/includes/uf.lua), in order: crawls, state, the
 * domain config and blacklist, the crawls' due index, then the crawl's group ({@link urlFrontierCrawlGroup}).
 */
function urlFrontierScriptKeys(p: UrlFrontierPartition, crawl: string, queues: readonly string[]): string[] {
  return [...urlFrontierScriptGlobals(p), ...urlFrontierCrawlGroup(p, crawl, queues)];
}

/**
 * The KEYS of a URL frontier script over queues of several crawls (scripts/includes/uf.lua): the frontier-wide keys,
 * then each crawl's group ({@link urlFrontierCrawlGroup}), in order.
 */
export function urlFrontierGroupsKeys(
  p: UrlFrontierPartition,
  groups: readonly { crawl: string; keys: readonly string[] }[],
): string[] {
  const out = urlFrontierScriptGlobals(p);
  for (const { crawl, keys } of groups) out.push(...urlFrontierCrawlGroup(p, crawl, keys));
  return out;
}

/**
 * The KEYS of scripts/uf-release.lua: the frontier-wide keys, the hold buckets (by their end, `ends`) read, then each
 * crawl's group ({@link urlFrontierCrawlGroup}).
 */
export function urlFrontierReleaseKeys(
  p: UrlFrontierPartition,
  ends: readonly number[],
  groups: readonly { crawl: string; keys: readonly string[] }[],
): string[] {
  const out = urlFrontierScriptGlobals(p);
  for (const end of ends) out.push(urlFrontierHoldBucket(p, end));
  for (const { crawl, keys } of groups) out.push(...urlFrontierCrawlGroup(p, crawl, keys));
  return out;
}

/**
 * The KEYS of scripts/uf-claim.lua: the due index over every crawl, or one crawl's due and legacy rotation, and the
 * index over every crawl that corrects it (once the frontier is indexed: `withQueueDue`).
 */
export function urlFrontierClaimKeys(
  p: UrlFrontierPartition,
  crawl: string | undefined,
  withQueueDue = true,
): string[] {
  const g = urlFrontierGlobalKeys(p);
  if (crawl === undefined) return [g.queueDue];
  const c = urlFrontierCrawlKeys(p, crawl);
  return withQueueDue ? [c.due, c.legacyRotation, g.queueDue] : [c.due, c.legacyRotation];
}

/**
 * The KEYS of scripts/uf-index.lua: state, the due index over every crawl, the crawl's queues, due and legacy
 * rotation, then each queue's sched, held and info.
 */
export function urlFrontierIndexKeys(p: UrlFrontierPartition, crawl: string, queues: readonly string[]): string[] {
  const g = urlFrontierGlobalKeys(p);
  const c = urlFrontierCrawlKeys(p, crawl);
  const out = [g.state, g.queueDue, c.queues, c.due, c.legacyRotation];
  for (const key of queues) {
    const q = urlFrontierQueueKeys(p, crawl, key);
    out.push(q.sched, q.held, q.info);
  }
  return out;
}

/** {@link urlFrontierScriptKeys} of one queue (14 keys). */
export function urlFrontierQueueKeyList(p: UrlFrontierPartition, crawl: string, key: string): string[] {
  return urlFrontierScriptKeys(p, crawl, [key]);
}

/**
 * Decoding what info.lua returns into {@link CrawlInfo} (lib/redis/frontier.ts `crawlInfo` / `appInfo`).
 */
import type { CrawlInfo, CrawlWaits } from '../frontier-model.ts';
import { decodePriority } from './member.ts';

/**
 * Decodes a crawl's counters as info.lua returns them: its K.cidx range joined into one string,
 * `member \x01 score \x01 ...`, where a member is `<ref>\0<domain>\0<pe>` (queued requests at a priority;
 * count = score - base) or `<ref>\0<domain>` (a page-cap counter, not reported).
 * One pass with indexOf, no intermediate arrays: a crawl over 10k domains has ~35k entries (read in pages, info.lua).
 */
export function decodeCounters(
  packed: string,
  base: number,
  /** Counters (domain and priority) already decoded: given, a counter in it is skipped, and the others added. */
  seen?: Set<string>,
  /** Adds to these (a crawl's earlier pages). */
  domains: CrawlInfo['domains'] = {},
): CrawlInfo['domains'] {
  const end = packed.length;
  let i = 0;
  while (i < end) {
    const memberEnd = packed.indexOf('\x01', i);
    if (memberEnd < 0) break;
    const a = packed.indexOf('\0', i);
    const b = packed.indexOf('\0', a + 1);
    let j = memberEnd + 1;
    let score = 0;
    let digits = true;
    for (; j < end; j++) {
      const c = packed.charCodeAt(j);
      if (c === 1) break;
      if (c < 48 || c > 57) digits = false;
      score = score * 10 + (c - 48);
    }
    // A server that formats doubles differently (exponent notation) still parses, only slower.
    if (!digits) score = Number(packed.slice(memberEnd + 1, j));
    if (b >= 0 && b < memberEnd && !seen?.has(packed.slice(a + 1, memberEnd))) {
      seen?.add(packed.slice(a + 1, memberEnd));
      const d = packed.slice(a + 1, b);
      const prio = decodePriority(packed.slice(b + 1, memberEnd));
      const n = score - base;
      let e = domains[d];
      if (e === undefined) {
        e = { priorities: {}, total: 0 };
        domains[d] = e;
      }
      e.priorities[prio] = (e.priorities[prio] ?? 0) + n;
      e.total += n;
    }
    i = j + 1;
  }
  return domains;
}

/** info.lua's `waits` of one crawl on one partition. */
export function decodeWaits(w: number[]): CrawlWaits {
  const [throttledDomains = 0, throttleDueMs = 0, retrying = 0, retryDueMs = 0, retries = 0] = w.map(Number);
  return { throttledDomains, throttleDueMs, retrying, retryDueMs, retries };
}

/** The waits of two partitions of one crawl as one: counts summed, the earlier due time (0 is none) kept. */
function mergeWaits(a: CrawlWaits | undefined, b: CrawlWaits | undefined): CrawlWaits | undefined {
  if (a === undefined || b === undefined) return a ?? b;
  const earlier = (x: number, y: number) => (x === 0 ? y : y === 0 ? x : Math.min(x, y));
  const retryDueMs = earlier(a.retryDueMs, b.retryDueMs);
  return {
    throttledDomains: a.throttledDomains + b.throttledDomains,
    throttleDueMs: earlier(a.throttleDueMs, b.throttleDueMs),
    retrying: a.retrying + b.retrying,
    retryDueMs,
    retries: retryDueMs === a.retryDueMs ? a.retries : b.retries,
  };
}

/** Sums the per-partition infos of the same crawl. */
export function mergeInfos(infos: CrawlInfo[]): CrawlInfo[] {
  const byCrawl = new Map<string, CrawlInfo>();
  for (const info of infos) {
    const key = `${info.settings.appid}\n${info.settings.crawlid}`;
    const acc = byCrawl.get(key);
    if (!acc) {
      byCrawl.set(key, info);
      continue;
    }
    acc.queued += info.queued;
    acc.leased += info.leased;
    acc.done += info.done;
    acc.failed += info.failed;
    const waits = mergeWaits(acc.waits, info.waits);
    if (waits !== undefined) acc.waits = waits;
    for (const [d, e] of Object.entries(info.domains)) {
      const a = acc.domains[d] ?? { priorities: {}, total: 0 };
      for (const [prio, n] of Object.entries(e.priorities))
        a.priorities[Number(prio)] = (a.priorities[Number(prio)] ?? 0) + n;
      a.total += e.total;
      acc.domains[d] = a;
    }
  }
  return [...byCrawl.values()];
}

/**
 * A batch of requests as enqueue.lua takes it (and ack-enqueue.lua, which queues an ack's children with the same
 * include): the dupefilter KEYS and the ARGV that encode crawls and requests, and the per-request codes the
 * scripts answer, read back as {@link EnqueueOutcome}s.
 */
import type { CrawlRef, EnqueueOutcome, FrontierItem, PartitionRef } from '../frontier-model.ts';
import type { DupeCache } from './dupe-cache.ts';
import type { ScriptArg } from './frontier-calls.ts';
import { crawlKey, dupefilterKey } from './keys.ts';
import { memberTail } from './member.ts';

/** enqueue.lua's code per request → its outcome. */
const OUTCOMES: Record<string, EnqueueOutcome> = {
  '1': 'queued',
  '0': 'duplicate',
  '-1': 'stopped',
  '-2': 'expired',
  '-3': 'capped',
  '-4': 'unknown_crawl',
};

/** enqueue.lua's code for a request → its outcome. */
export function outcomeOf(code: number | undefined): EnqueueOutcome {
  return OUTCOMES[String(code)] ?? 'unknown_crawl';
}

/** A memo of crawl keys for one spider type: one SHA-1 per crawl, not per request (few crawls per batch). */
export function crawlKeys(spider: string): (crawl: CrawlRef) => string {
  const keys = new Map<string, string>();
  return (crawl) => {
    const id = `${crawl.appid}\n${crawl.crawlid}`;
    let ck = keys.get(id);
    if (ck === undefined) {
      ck = crawlKey(crawl.appid, crawl.crawlid, spider);
      keys.set(id, ck);
    }
    return ck;
  };
}

/** What {@link enqueueArgs} builds for one script call. */
export interface EnqueueBatch {
  /** The dupefilter key of each crawl of the batch, in crawl-index order (KEYS after the partition's). */
  dupeKeys: string[];
  /** The ARGV after the TTL: spider type, the crawls, the requests. */
  args: ScriptArg[];
  /** The positions in `idx` that went (the others were known duplicates). */
  sent: number[];
  /** Each position's crawl index (1-based, as the script numbers them). */
  crawlOf: number[];
}

/**
 * The dupefilter KEYS and the ARGV of the requests `idx` of `items` (all in partition `p`), as enqueue.lua takes
 * them after its TTL (includes/enqueue.lua): spider type, the crawls, the requests. With a `cache`, a crawl sent
 * without settings claims the token it knows for its dupefilter, and its requests cached under that token are left
 * out (`sent` lists the positions in `idx` that went; `crawlOf` gives each position's crawl index).
 */
export function enqueueArgs(
  p: PartitionRef,
  spider: string,
  items: readonly FrontierItem[],
  idx: readonly number[],
  keyOf: (crawl: CrawlRef) => string,
  cache?: DupeCache,
): EnqueueBatch {
  const crawlIndex = new Map<string, number>();
  const crawlArgs: (string | number)[] = [];
  const dupeKeys: string[] = [];
  const reqArgs: ScriptArg[] = [];
  const sent: number[] = [];
  const crawlOf: number[] = new Array(idx.length);
  // A crawl with a seed in the batch claims nothing: the seed may start it afresh (a claim would not hold).
  const seeded = new Set<string>();
  if (cache !== undefined)
    for (const i of idx)
      if ((items[i] as FrontierItem).crawl.settings) seeded.add(keyOf((items[i] as FrontierItem).crawl));
  for (let k = 0; k < idx.length; k++) {
    const { crawl, request } = items[idx[k] as number] as FrontierItem;
    const ck = keyOf(crawl);
    let ci = crawlIndex.get(ck);
    if (ci === undefined) {
      ci = crawlIndex.size + 1;
      crawlIndex.set(ck, ci);
      const dk = dupefilterKey(p, ck);
      dupeKeys.push(dk);
      const s = crawl.settings;
      const claim = cache !== undefined && !seeded.has(ck) ? cache.claim(dk) : '';
      crawlArgs.push(ck, crawl.appid, s ? JSON.stringify(s) : '', s?.expires ?? 0, s?.domain_max_pages ?? 0, claim);
    } else if (crawl.settings && crawlArgs[(ci - 1) * 6 + 2] === '') {
      // A seed after a child of the same crawl in one batch: the seed's settings register the crawl.
      crawlArgs[(ci - 1) * 6 + 2] = JSON.stringify(crawl.settings);
      crawlArgs[(ci - 1) * 6 + 3] = crawl.settings.expires ?? 0;
      crawlArgs[(ci - 1) * 6 + 4] = crawl.settings.domain_max_pages ?? 0;
    }
    crawlOf[k] = ci;
    if (request.fingerprint.length !== 8) throw new Error('request fingerprints are 8 bytes');
    const claim = crawlArgs[(ci - 1) * 6 + 5] as string;
    if (claim !== '' && cache?.has(dupeKeys[ci - 1] as string, claim, request.fingerprint)) continue;
    sent.push(k);
    reqArgs.push(
      ci,
      request.fingerprint,
      request.domain,
      request.priority,
      request.depth,
      request.retries ?? 0,
      memberTail(request.url, request.domain),
    );
  }
  return { dupeKeys, args: [spider, crawlIndex.size, ...crawlArgs, sent.length, ...reqArgs], sent, crawlOf };
}

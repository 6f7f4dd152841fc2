/**
 * A page's children: the links its crawl's filters allow and its spider follows, as frontier entries by
 * spider type, at `priority - 10` and `depth + 1` (docs/contract.md behaviour 3), each URL at most 2048
 * characters long.
 */
import type { CrawlRef, Lease, QueueRequest } from '../redis/frontier-types.ts';
import { MAX_URL_LENGTH } from '../schemas/index.ts';
import { registrableDomain } from './domain.ts';
import { linkFilter } from './filters.ts';
import { requestFingerprint } from './fingerprint.ts';
import type { FetchResult, FollowRequest, Link, Spider, SpiderRequest } from './types.ts';

/** Children to enqueue, by spider type. */
export type ChildBatch = Map<string, { crawl: CrawlRef; request: QueueRequest }[]>;

/**
 * The page's links a spider follows, by spider type, ready to enqueue: none past the crawl's maxdepth, unless the
 * spider bounds its own walk.
 */
export function childRequests(
  lease: Lease,
  req: SpiderRequest,
  response: FetchResult,
  links: Link[],
  spiders: ReadonlyMap<string, Spider>,
): ChildBatch {
  const crawl = lease.crawl;
  const bySpider: ChildBatch = new Map();
  if (links.length === 0) return bySpider;
  const spider = spiders.get(crawl.spiderid);
  if (!spider) return bySpider;
  if (!spider.boundsItself && lease.depth >= (crawl.maxdepth ?? 0)) return bySpider;
  const allowed = linkFilter(crawl);
  const follow: FollowRequest[] = spider.follow(
    req,
    response,
    links.filter((l) => allowed(l.url)),
  );
  for (const f of follow) {
    // A page may link to megabytes of URL; the frontier stores every queued URL, so longer ones are not
    // followed (seeds are held to the same bound at validation; Scrapy's URLLENGTH_LIMIT is alike).
    if (f.url.length > MAX_URL_LENGTH) continue;
    let domain: string;
    let fingerprint: Buffer;
    try {
      domain = registrableDomain(f.url);
      fingerprint = requestFingerprint(f.url);
    } catch {
      continue;
    }
    const type = f.spider ?? crawl.spiderid;
    const list = bySpider.get(type) ?? [];
    list.push({
      crawl: { appid: crawl.appid, crawlid: crawl.crawlid },
      request: { url: f.url, domain, fingerprint, priority: lease.priority - 10, depth: lease.depth + 1 },
    });
    bySpider.set(type, list);
  }
  return bySpider;
}

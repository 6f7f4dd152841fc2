/**
 * A page's children: what its spider follows, as frontier entries by spider type (docs/contract.md behaviour 3):
 * at `priority - 10` unless the spider says otherwise, at `depth + 1`, each URL at most 2048 characters long,
 * within the crawl's `allowed_domains`, and none past the crawl's `maxdepth` unless the spider bounds its own walk.
 */
import type { CrawlRef, Lease, QueueRequest } from '../../frontier-model.ts';
import { MAX_URL_LENGTH } from '../../schemas/index.ts';
import { registrableDomain } from '../domain.ts';
import { linkFilter } from '../extract/filters.ts';
import { requestFingerprint } from '../fingerprint.ts';
import { queuedUrl } from '../spiders/run.ts';
import type { FollowRequest, Spider, SpiderRequest } from '../types.ts';

/** Children to enqueue, by spider type. */
export type ChildBatch = Map<string, { crawl: CrawlRef; request: QueueRequest }[]>;

/** The range of priorities a follow entry may set: what the frontier's members encode (lib/redis/member.ts). */
export const MIN_FOLLOW_PRIORITY = -2000;
export const MAX_FOLLOW_PRIORITY = 1000;

/** Why a follow entry was dropped, for the caller's log. */
export interface DroppedFollow {
  url: unknown;
  reason: string;
}

/**
 * The follow entries of a page as frontier entries by spider type. A hand-off (`spider` other than the page's)
 * carries the crawl's settings with that `spiderid`, so its first one registers the crawl under that type.
 * The other type is not checked here: another crawler of the fleet may serve it (a type no crawler serves keeps its
 * requests queued until one does, or the crawl expires). Entries with a URL that is not an absolute http(s) URL of
 * at most 2048 characters, or with attrs too big, are dropped and reported in `dropped`; entries outside the
 * crawl's `allowed_domains` are dropped silently, as filtered links are.
 */
export function childRequests(
  lease: Lease,
  req: SpiderRequest,
  spider: Pick<Spider, 'boundsItself'> | undefined,
  follow: FollowRequest[],
  dropped: DroppedFollow[] = [],
): ChildBatch {
  const crawl = lease.crawl;
  const bySpider: ChildBatch = new Map();
  if (follow.length === 0) return bySpider;
  if (!spider?.boundsItself && lease.depth >= (crawl.maxdepth ?? 0)) return bySpider;
  const own = req.spider ?? crawl.spiderid;
  // Links were filtered by every rule before the spider saw them; what else a spider follows (a sitemap's URLs)
  // stays within the crawl's domains, as Scrapy's offsite middleware keeps every request.
  const inDomains = linkFilter({ allowed_domains: crawl.allowed_domains, deny_extensions: [] });
  for (const f of follow) {
    if (f === null || typeof f !== 'object' || typeof f.url !== 'string') {
      dropped.push({ url: (f as { url?: unknown } | null)?.url, reason: 'no url' });
      continue;
    }
    // A page may link to megabytes of URL; the frontier stores every queued URL, so longer ones are not
    // followed (seeds are held to the same bound at validation; Scrapy's URLLENGTH_LIMIT is alike).
    if (f.url.length > MAX_URL_LENGTH || !/^https?:\/\//i.test(f.url)) {
      dropped.push({ url: f.url.slice(0, 200), reason: 'not an absolute http(s) URL of at most 2048 characters' });
      continue;
    }
    if (!inDomains(f.url)) continue;
    const type = typeof f.spider === 'string' && f.spider !== '' ? f.spider : own;
    const url = queuedUrl(f.url, f.attrs);
    if (url === undefined) {
      dropped.push({ url: f.url, reason: 'attrs are not a JSON object of at most 1024 bytes' });
      continue;
    }
    let domain: string;
    let fingerprint: Buffer;
    try {
      domain = registrableDomain(f.url);
      // dont_filter: a fingerprint of its own per asking page, so the crawl's dupefilter never matches the URL's.
      fingerprint =
        f.dont_filter === true
          ? requestFingerprint(f.url, 'GET', `dont_filter\n${req.url}`)
          : requestFingerprint(f.url);
    } catch {
      dropped.push({ url: f.url, reason: 'invalid URL' });
      continue;
    }
    const priority =
      typeof f.priority === 'number' && Number.isFinite(f.priority)
        ? Math.min(MAX_FOLLOW_PRIORITY, Math.max(MIN_FOLLOW_PRIORITY, Math.round(f.priority)))
        : lease.priority - 10;
    const ref: CrawlRef = { appid: crawl.appid, crawlid: crawl.crawlid };
    if (type !== own) ref.settings = { ...crawl, spiderid: type };
    const list = bySpider.get(type) ?? [];
    list.push({ crawl: ref, request: { url, domain, fingerprint, priority, depth: lease.depth + 1 } });
    bySpider.set(type, list);
  }
  return bySpider;
}

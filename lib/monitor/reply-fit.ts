/**
 * Replies that always fit a Kafka message (docs/contract.md "Replies", the **Fix** on info): an info reply lists
 * every domain of a crawl, as Scrapy Cluster's does, and a crawl over 100,000 domains would be a reply of megabytes,
 * which the broker refuses, so the client would wait for an answer that never comes. A reply over the limit keeps
 * each crawl's busiest domains (by `total`, ties by name) and says so in **Ext** `cut`; the totals
 * (`total_pending`, `total_domains`, `distinct_domains`) still count everything.
 */
type Reply = Record<string, unknown>;

/** Bytes kept free of the limit for the record's key, headers and framing. */
const RECORD_OVERHEAD = 1024;

type Domains = Record<string, { total?: unknown }>;

function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const byteLength = (s: string) => Buffer.byteLength(s, 'utf8');

/** A map's entries, busiest first: largest numeric `total`, then name. */
function busiest<T extends { total?: unknown }>(map: Record<string, T>): [string, T][] {
  const total = (v: T) => (typeof v.total === 'number' ? v.total : 0);
  return Object.entries(map).sort(([a, x], [b, y]) => total(y) - total(x) || (a < b ? -1 : a > b ? 1 : 0));
}

/** The largest n in [0, max] for which `fits(n)`, given fits is monotone (true up to some n, false after). */
function largestFitting(max: number, fits: (n: number) => boolean): number {
  let lo = 0;
  let hi = max;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * The JSON value to send for `reply`: the reply itself when it fits `maxBytes`, else the reply cut to fit (info's
 * domain lists, then the app form's crawl list), else a reply of its scalar fields with an `error`.
 */
export function replyValue(reply: Reply, maxBytes: number): string {
  const whole = JSON.stringify(reply);
  const limit = maxBytes - RECORD_OVERHEAD;
  if (byteLength(whole) <= limit) return whole;
  return cutReply(reply, limit) ?? scalarReply(reply, byteLength(whole), maxBytes);
}

function cutReply(reply: Reply, limit: number): string | undefined {
  const crawlForm = isMap(reply.domains);
  const appForm = isMap(reply.crawlids);
  if (!crawlForm && !appForm) return undefined;
  // Each crawl's domains, busiest first (the crawl form has one crawl).
  const crawls: [string, Record<string, unknown>][] = appForm
    ? busiest(reply.crawlids as Record<string, { total?: unknown }>).map(([id, c]) => [
        id,
        c as Record<string, unknown>,
      ])
    : [['', reply as Record<string, unknown>]];
  const sorted = new Map(crawls.map(([id, c]) => [id, isMap(c.domains) ? busiest(c.domains as Domains) : []]));
  const most = Math.max(0, ...[...sorted.values()].map((d) => d.length));
  const build = (perCrawl: number, crawlCount: number): string => {
    const cutOf = (id: string, c: Record<string, unknown>) => {
      const domains = sorted.get(id) ?? [];
      return isMap(c.domains) ? { ...c, domains: Object.fromEntries(domains.slice(0, perCrawl)) } : c;
    };
    const cut: Record<string, unknown> = { domains_per_crawl: perCrawl, limit_bytes: limit + RECORD_OVERHEAD };
    if (!appForm) return JSON.stringify({ ...cutOf('', reply), cut });
    if (crawlCount < crawls.length) cut.crawlids_listed = crawlCount;
    const listed = crawls.slice(0, crawlCount).map(([id, c]) => [id, cutOf(id, c)]);
    return JSON.stringify({ ...reply, crawlids: Object.fromEntries(listed), cut });
  };
  const fits = (value: string) => byteLength(value) <= limit;
  if (fits(build(0, crawls.length))) {
    const perCrawl = largestFitting(most, (n) => fits(build(n, crawls.length)));
    return build(perCrawl, crawls.length);
  }
  if (!appForm || !fits(build(0, 0))) return undefined;
  const crawlCount = largestFitting(crawls.length, (n) => fits(build(0, n)));
  return build(0, crawlCount);
}

/** The reply's scalar fields and an error: what is left when nothing else fits. */
function scalarReply(reply: Reply, bytes: number, maxBytes: number): string {
  const scalars = Object.entries(reply).filter(([, v]) => typeof v !== 'object' || v === null);
  const short = scalars.filter(([, v]) => typeof v !== 'string' || v.length <= 1000);
  return JSON.stringify({
    ...Object.fromEntries(short),
    error: 'reply too large',
    reason: `the reply is ${bytes} bytes, over the ${maxBytes}-byte message limit (KAFKA_MAX_MESSAGE_BYTES); ask a narrower question`,
  });
}

/**
 * The web dashboard (issue 7 part 4): `GET /ui` is one static page (lib/rest/dashboard/: HTML, CSS and
 * type-checked vanilla JS scripts, inlined as they are by lib/rest/dashboard-page.ts; no build step, nothing
 * fetched from elsewhere) that refreshes every 2 s from the JSON endpoints below and submits / stops crawls
 * through `POST /feed` and `POST /poll`, like any client. The shapes of the answers live in
 * lib/rest/dashboard-api.ts, which the page's scripts are checked against too.
 *
 * | Route | Answers (`data` of a SUCCESS envelope) |
 * |---|---|
 * | `GET /ui` | the page (text/html, strict CSP: only its own inline scripts and style, same-origin requests) |
 * | `GET /ui/api/overview?appid=A&top=N` | everything below in one answer (what the page polls) |
 * | `GET /ui/api/crawls?appid=A` | the app's crawls per spider: pending (queued + leased), done, failed, state |
 * | `GET /ui/api/queues?top=N` | total backlog and the N domains with the most queued requests (default 10, at most 100) |
 * | `GET /ui/api/fleet` | live heartbeats: crawlers (beat in the last 60 s; `beating` = in the last 30 s) and monitor / REST nodes |
 * | `GET /ui/api/throughput` | the `crawler:<spider>:<status>` counters summed: lifetime, last 15 min, last hour; requests per proxy (`proxy:<name>:<outcome>`) |
 *
 * **Which app.** The frontier indexes crawls per appid and keeps no list of apps, so the crawl list is for
 * one `appid` (3–40 chars) named in the query; without one, `crawls` is empty. The page remembers the last
 * appid watched or submitted (localStorage; `?appid=` in the page URL overrides) and defaults to `dashboard`.
 * A crawl leaves the frontier when stopped, expired, or swept a dupefilter TTL after completing; the page
 * keeps showing the crawls it saw (stopped or gone, pending 0) until it is reloaded.
 *
 * **Bounded work.** Every answer reads registries and counters, never the keyspace: the spider registry
 * (SMEMBERS), per spider the app's crawl counters (info.lua: O(crawls of the app × domains), in calls of at most
 * 250 counters and 50 crawls) and the backlog (`Frontier.queueSummary`: kept totals, and the busiest domains from
 * the per-domain counts read in pages of 500, so no command grows with the domains; it first settles stopped crawls'
 * counters in bounded chunks, as the `queue` stats do), the stats name registry and one HMGET per crawler counter,
 * and the heartbeat set. Each Redis call is bounded by `probeTimeoutMs`; Redis down is answered 500. At most
 * {@link MAX_CRAWLS} crawls are listed (running first).
 *
 * **Throughput.** The counters keep per-window totals in buckets; the `900` window's 15 buckets of 60 s are
 * the last 15 minutes per minute (`throughput.minutes`), the chart's history when the page loads. From then on
 * the page also samples the lifetime total at each refresh and plots pages per minute from the differences
 * (server clock), and shows the last 15 minutes' and hour's totals as the counters report them.
 *
 * **Failures.** A crawl whose every page failed is `failed`, not `complete`; each listed crawl with failed pages
 * carries its latest failures (URL, status, reason) from the crawlers' failure log (lib/redis/failure-log.ts).
 */
import { SchemaValidationError } from '../errors.ts';
import { HEARTBEAT_TTL_MS, urlFrontierBacklog } from '../monitor/stats-report.ts';
import { URL_FRONTIER_SPIDERID } from '../schemas/index.ts';
import type { StatsCounts } from '../stats-model.ts';
import type { DashboardFrontier, ResolvedRestOptions, RestContext } from './context.ts';
import type {
  DashboardCrawl,
  DashboardCrawls,
  DashboardFleet,
  DashboardOverview,
  DashboardQueues,
  DashboardThroughput,
} from './dashboard-api.ts';
import { DASHBOARD_HTML, DASHBOARD_SCRIPT_HASHES, DASHBOARD_STYLE_HASH } from './dashboard-page.ts';
import { causeOf, failure, type RestRequest, type RestResponse, success } from './envelope.ts';
import { withTimeout } from './timeout.ts';

/** Most crawls listed per answer (running ones first, then by crawlid). */
const MAX_CRAWLS = 200;
/** Domains listed in `queues.top` unless `top` says otherwise. */
const DEFAULT_TOP_DOMAINS = 10;
/** Most domains `top` may ask for. */
const MAX_TOP_DOMAINS = 100;
/** A crawler whose last beat is younger than this is `beating` (crawlers beat every 10 s). */
const BEATING_MS = 30_000;
/**
 * A crawler silent this long (6 missed beats) is dropped from the fleet: its runtime stopped without removing its
 * heartbeat (killed). The `stats` replies keep Scrapy Cluster's longer heartbeat TTL (HEARTBEAT_TTL_MS).
 */
const CRAWLER_LISTED_MS = 60_000;
/** Failed pages listed per crawl. */
const MAX_FAILURES_SHOWN = 5;

interface DashboardQuery {
  appid: string | undefined;
  top: number;
}

/** The dashboard's routes, keyed like the router's table: path → method → handler. */
export function dashboardRoutes(
  ctx: RestContext,
  options: ResolvedRestOptions,
): Record<string, Record<string, (request: RestRequest) => Promise<RestResponse>>> {
  const api = (build: (frontier: DashboardFrontier, q: DashboardQuery) => Promise<unknown>) => ({
    GET: (request: RestRequest) => answer(ctx, request, build),
  });
  const bound = <T>(p: Promise<T>) => withTimeout(p, options.probeTimeoutMs, 'Redis');
  const reader = new DashboardReader(ctx, bound);
  return {
    '/ui': { GET: async () => pageResponse() },
    '/ui/api/overview': api((f, q) => reader.overview(f, q)),
    '/ui/api/crawls': api((f, q) => reader.crawls(f, q.appid)),
    '/ui/api/queues': api((f, q) => reader.queues(f, q.top)),
    '/ui/api/fleet': api(() => reader.fleet()),
    '/ui/api/throughput': api(() => reader.throughput()),
  };
}

async function answer(
  ctx: RestContext,
  request: RestRequest,
  build: (frontier: DashboardFrontier, q: DashboardQuery) => Promise<unknown>,
): Promise<RestResponse> {
  let query: DashboardQuery;
  try {
    query = parseQuery(request.query);
  } catch (error) {
    if (!(error instanceof SchemaValidationError)) throw error;
    const { kind, details } = error;
    return failure(400, { message: 'Invalid query parameters.', cause: error.message, kind, details });
  }
  if (ctx.frontier === undefined) {
    return failure(503, { message: 'The dashboard is not available here: this REST service has no frontier' });
  }
  try {
    return success(await build(ctx.frontier, query));
  } catch (error) {
    ctx.log.error('dashboard: reading the cluster state failed', { path: request.path, error: causeOf(error) });
    return failure(500, { message: 'Unable to connect to Redis', cause: causeOf(error) });
  }
}

/** `appid` (3–40 chars, optional) and `top` (1–{@link MAX_TOP_DOMAINS}); other parameters are ignored. */
function parseQuery(raw: string | undefined): DashboardQuery {
  const params = new URLSearchParams(raw ?? '');
  const appid = params.get('appid') ?? '';
  const topText = params.get('top');
  const details: { path: string; message: string }[] = [];
  if (appid !== '' && (appid.length < 3 || appid.length > 40)) {
    details.push({ path: '/appid', message: 'must be 3 to 40 characters long' });
  }
  let top = DEFAULT_TOP_DOMAINS;
  if (topText !== null && topText !== '') {
    top = Number(topText);
    if (!Number.isInteger(top) || top < 1 || top > MAX_TOP_DOMAINS) {
      details.push({ path: '/top', message: `must be an integer from 1 to ${MAX_TOP_DOMAINS}` });
    }
  }
  if (details.length > 0) throw new SchemaValidationError('schema', details);
  return { appid: appid === '' ? undefined : appid, top };
}

const SECURITY_HEADERS = {
  'content-security-policy': [
    "default-src 'none'",
    `script-src ${DASHBOARD_SCRIPT_HASHES.map((h) => `'${h}'`).join(' ')}`,
    `style-src '${DASHBOARD_STYLE_HASH}'`,
    "connect-src 'self'",
    'img-src data:',
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; '),
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

function pageResponse(): RestResponse {
  return {
    status: 200,
    headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache', ...SECURITY_HEADERS },
    body: DASHBOARD_HTML,
  };
}

const SUCCESS_STATUS = /^[23]\d\d$/;

/** The reads behind the endpoints; `bound` puts a deadline on each Redis call. */
class DashboardReader {
  readonly #ctx: RestContext;
  readonly #bound: <T>(p: Promise<T>) => Promise<T>;

  constructor(ctx: RestContext, bound: <T>(p: Promise<T>) => Promise<T>) {
    this.#ctx = ctx;
    this.#bound = bound;
  }

  async overview(frontier: DashboardFrontier, q: DashboardQuery): Promise<DashboardOverview> {
    const now = this.#ctx.now();
    const spiders = await this.#bound(frontier.spiders());
    // Queues first: a backlog read settles stopped crawls' counters.
    const [queues, fleet, throughput] = await Promise.all([
      this.queues(frontier, q.top, spiders),
      this.fleet(),
      this.throughput(),
    ]);
    const crawls = await this.crawls(frontier, q.appid, spiders);
    return { server_time_ms: now, ...crawls, queues, fleet, throughput };
  }

  async crawls(frontier: DashboardFrontier, appid: string | undefined, known?: string[]): Promise<DashboardCrawls> {
    if (appid === undefined) return { appid: null, crawls: [], crawls_total: 0 };
    const now = this.#ctx.now();
    const spiders = known ?? (await this.#bound(frontier.spiders()));
    const rows: DashboardCrawl[] = [];
    for (const spiderid of spiders) {
      const infos = await this.#bound(frontier.appInfo(spiderid, appid, now));
      for (const [crawlid, info] of Object.entries(infos)) {
        const pending = info.queued + info.leased;
        rows.push({
          spiderid,
          appid,
          crawlid,
          pending,
          queued: info.queued,
          leased: info.leased,
          done: info.done,
          failed: info.failed,
          domains: Object.values(info.domains).filter((d) => d.total > 0).length,
          maxdepth: info.settings.maxdepth ?? 0,
          expires: info.settings.expires ?? 0,
          state: pending > 0 ? 'running' : info.done === 0 && info.failed > 0 ? 'failed' : 'complete',
          failures: [],
        });
      }
    }
    rows.sort(
      (a, b) =>
        Number(b.state === 'running') - Number(a.state === 'running') ||
        a.crawlid.localeCompare(b.crawlid) ||
        a.spiderid.localeCompare(b.spiderid),
    );
    const shown = rows.slice(0, MAX_CRAWLS);
    // Why pages failed: one pipelined read for the listed crawls that have failures.
    const failing = shown.filter((r) => r.failed > 0);
    const notes = await this.#bound(this.#ctx.stats.failures(failing, MAX_FAILURES_SHOWN));
    failing.forEach((r, i) => {
      r.failures = notes[i] ?? [];
    });
    return { appid, crawls: shown, crawls_total: rows.length };
  }

  async queues(frontier: DashboardFrontier, top: number, known?: string[]): Promise<DashboardQueues> {
    const now = this.#ctx.now();
    const spiders = known ?? (await this.#bound(frontier.spiders()));
    const all: DashboardQueues['top'] = [];
    let total = 0;
    let domains = 0;
    for (const spiderid of spiders) {
      const summary = await this.#bound(frontier.queueSummary(spiderid, top, now));
      total += summary.queued;
      domains += summary.domains;
      for (const { domain, backlog } of summary.busiest) all.push({ spiderid, domain, backlog });
    }
    // The URL Frontier API's queues (summed over its crawls), as spider type `url-frontier`.
    for (const [domain, n] of await this.#bound(urlFrontierBacklog(this.#ctx.urlFrontier))) {
      all.push({ spiderid: URL_FRONTIER_SPIDERID, domain, backlog: n });
      total += n;
      domains += 1;
    }
    all.sort((a, b) => b.backlog - a.backlog || a.domain.localeCompare(b.domain));
    return { total_backlog: total, num_domains: domains, top: all.slice(0, top) };
  }

  async fleet(): Promise<DashboardFleet> {
    const { stats } = this.#ctx;
    const now = this.#ctx.now();
    const live = (kind: string, ttlMs = HEARTBEAT_TTL_MS) => this.#bound(stats.live(kind, now, ttlMs));
    const [crawlerIds, beating, kafkaMonitor, redisMonitor, rest] = await Promise.all([
      live('crawler', CRAWLER_LISTED_MS),
      live('crawler', BEATING_MS),
      live('kafka-monitor'),
      live('redis-monitor'),
      live('rest'),
    ]);
    const fresh = new Set(beating);
    const crawlers = crawlerIds.map((id) => {
      const bar = id.indexOf('|');
      return {
        spiderid: bar < 0 ? 'unknown' : id.slice(0, bar),
        node: bar < 0 ? id : id.slice(bar + 1),
        beating: fresh.has(id),
      };
    });
    return {
      crawlers,
      nodes: { 'kafka-monitor': kafkaMonitor, 'redis-monitor': redisMonitor, rest },
    };
  }

  async throughput(): Promise<DashboardThroughput> {
    const { stats } = this.#ctx;
    const [names, proxyNames] = await Promise.all([
      this.#bound(stats.names('crawler:')),
      this.#bound(stats.names('proxy:')),
    ]);
    const now = this.#ctx.now();
    const [counts, minutes, proxyCounts] = await Promise.all([
      names.length === 0 ? ({} as Record<string, StatsCounts>) : this.#bound(stats.read(names, now)),
      this.#bound(stats.minutes(names, now)),
      proxyNames.length === 0 ? ({} as Record<string, StatsCounts>) : this.#bound(stats.read(proxyNames, now)),
    ]);
    const out: DashboardThroughput = {
      pages_total: 0,
      pages_15m: 0,
      pages_1h: 0,
      ok_total: 0,
      ok_15m: 0,
      by_status: [],
      minutes: minutes.map((m) => ({ start_ms: m.startMs, pages: m.count })),
      proxies: proxyRows(proxyCounts),
    };
    const byStatus = new Map<string, { total: number; last_15m: number }>();
    for (const [name, c] of Object.entries(counts)) {
      // crawler:<spider>:<status>
      const status = name.slice(name.indexOf(':', 'crawler:'.length) + 1);
      out.pages_total += c.lifetime;
      out.pages_15m += c['900'];
      out.pages_1h += c['3600'];
      if (SUCCESS_STATUS.test(status)) {
        out.ok_total += c.lifetime;
        out.ok_15m += c['900'];
      }
      const s = byStatus.get(status) ?? { total: 0, last_15m: 0 };
      s.total += c.lifetime;
      s.last_15m += c['900'];
      byStatus.set(status, s);
    }
    out.by_status = [...byStatus.entries()]
      .map(([status, s]) => ({ status, ...s }))
      .sort((a, b) => b.total - a.total || a.status.localeCompare(b.status))
      .slice(0, 12);
    return out;
  }
}

/** Most proxies listed on the dashboard. */
const MAX_PROXIES_SHOWN = 20;

/** `proxy:<name>:<outcome>` counters as one row per proxy (its name may hold `:`, as host:port), most requests first. */
function proxyRows(counts: Record<string, StatsCounts>): DashboardThroughput['proxies'] {
  const rows = new Map<string, DashboardThroughput['proxies'][number]>();
  for (const [counter, c] of Object.entries(counts)) {
    const cut = counter.lastIndexOf(':');
    const name = counter.slice('proxy:'.length, cut);
    const row = rows.get(name) ?? { name, ok_total: 0, ok_15m: 0, failed_total: 0, failed_15m: 0 };
    if (counter.slice(cut + 1) === 'ok') {
      row.ok_total += c.lifetime;
      row.ok_15m += c['900'];
    } else {
      row.failed_total += c.lifetime;
      row.failed_15m += c['900'];
    }
    rows.set(name, row);
  }
  return [...rows.values()]
    .sort((a, b) => b.ok_total + b.failed_total - (a.ok_total + a.failed_total) || a.name.localeCompare(b.name))
    .slice(0, MAX_PROXIES_SHOWN);
}

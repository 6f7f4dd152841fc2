/**
 * A simulated internet (issue 32), the model: N hosts, each with an address of its own on loopback (Linux routes
 * all of 127/8 to `lo`; host k is `web<k>.test` at 127.0.0.(k + 10), then 127.0.1.10...), and the pages they serve,
 * all deterministic from a seed. Nothing here serves: localstack/site/internet-server.ts does, in this process or in
 * a child one; tests and the `realweb` bench ask this module which pages exist, answer, fail or are disallowed.
 *
 * - Hosts: a median latency each, log-normal around `medianLatencyMs` (spread `hostSigma`); exactly
 *   round(hosts × `deadShare`) hosts that never answer (they accept the connection, robots.txt included, and say
 *   nothing) and round(hosts × `dripShare`) that answer in time but drip the body over `dripMs`; robots.txt per host:
 *   round(hosts × `disallowShare`) disallow `/archive/`, round(hosts × `crawlDelayShare`) ask for
 *   `Crawl-delay: crawlDelaySec`, the others allow all.
 * - Pages: page n lives on host n % hosts at `/p/<n>` (or `/archive/<n>` for a share `archiveShare`); its size is
 *   log-normal around `medianBytes` within 5 KB..500 KB, or 500 KB..`maxBytes` (log-uniform) for a share `bigShare`;
 *   its latency (time to the response head) is its host's median times a log-normal factor (`requestSigma`), times
 *   3..10 for a share `tailShare` (the slow tail), at most `maxLatencyMs`; and its error, if any: `e500` (always
 *   500), `e503` and `e429` (every odd request of the page answers 503, or 429 with `Retry-After: 1`; the retry
 *   gets the page), `reset` (the connection is destroyed before any answer).
 * - Links: `links` per page; a share `sameHostShare` to pages of its own host, the others to any page, so a crawl
 *   from a few seeds reaches every host.
 *
 * {@link internetGeometry} holds all of it; `good(n)` says whether page n is eventually served 200 (its host
 * answers, its error is none or transient), `reachable` which pages a breadth-first crawl fetches.
 */
import { prng } from './prng.ts';

export interface InternetOptions {
  /** @default 1 */
  seed?: number;
  /** @default 50 */
  hosts?: number;
  /** @default 3000 */
  pages?: number;
  /** Links per page. @default 20 */
  links?: number;
  /** Share of a page's links that stay on its host. @default 0.7 */
  sameHostShare?: number;
  /** Median of the hosts' median latencies (ms). @default 300 */
  medianLatencyMs?: number;
  /** Log-normal sigma of the hosts' medians around `medianLatencyMs`. @default 0.4 */
  hostSigma?: number;
  /** Log-normal sigma of a request's latency around its host's median. @default 0.4 */
  requestSigma?: number;
  /** Share of pages in the slow tail (latency × 3..10). @default 0.03 */
  tailShare?: number;
  /** Cap of any latency (ms). @default 8000 */
  maxLatencyMs?: number;
  /** Share of hosts that never answer. @default 0.02 */
  deadShare?: number;
  /** Share of hosts that drip their bodies. @default 0.02 */
  dripShare?: number;
  /** How long a drip host takes to send a body (ms). @default 15000 */
  dripMs?: number;
  /** Median page size (bytes). @default 20000 */
  medianBytes?: number;
  /** Log-normal sigma of page sizes. @default 0.7 */
  bytesSigma?: number;
  /** Share of big pages (500 KB..maxBytes). @default 0.01 */
  bigShare?: number;
  /** Largest page (bytes). @default 2097152 */
  maxBytes?: number;
  /** Shares of pages answering 500, 503 (odd requests), 429 (odd requests), and resetting. @default 0.01, 0.01, 0.01, 0.005 */
  e500Share?: number;
  e503Share?: number;
  e429Share?: number;
  resetShare?: number;
  /** Share of pages under `/archive/` (disallowed by the hosts that disallow). @default 0.1 */
  archiveShare?: number;
  /** Share of hosts whose robots.txt disallows `/archive/`. @default 0.2 */
  disallowShare?: number;
  /** Share of hosts whose robots.txt asks for a Crawl-delay. @default 0.04 */
  crawlDelayShare?: number;
  /** @default 1 */
  crawlDelaySec?: number;
}

type HostKind = 'ok' | 'dead' | 'drip';
type PageError = 'none' | 'e500' | 'e503' | 'e429' | 'reset';

interface HostProfile {
  index: number;
  name: string;
  address: string;
  kind: HostKind;
  medianLatencyMs: number;
  disallowArchive: boolean;
  crawlDelaySec?: number;
}

interface PageProfile {
  n: number;
  host: number;
  path: string;
  bytes: number;
  latencyMs: number;
  error: PageError;
}

export interface InternetGeometry {
  options: Required<InternetOptions>;
  hosts: HostProfile[];
  /** Host names, in host order (page n is on `hostNames[n % hosts]`). */
  hostNames: string[];
  pages: number;
  port: number;
  page(n: number): PageProfile;
  hostOf(n: number): HostProfile;
  /** `http://<host>:<port>/p/<n>` (or `/archive/<n>`). */
  url(n: number): string;
  linksOf(n: number): number[];
  /** Page n answers 200 eventually (its host answers; no error, or a transient one). */
  good(n: number): boolean;
  /** robots.txt of its host allows page n (a dead host's robots.txt never answers: false). */
  allowed(n: number): boolean;
  /** The robots.txt a host serves. */
  robotsTxt(host: number): string;
  /**
   * Pages a breadth-first crawl from `seeds` to `maxdepth` fetches (seeds included): links are followed only from
   * good pages; with `obeyRobots`, pages robots.txt does not allow are neither fetched nor followed.
   */
  reachable(seeds: number | readonly number[], maxdepth: number, obeyRobots?: boolean): Set<number>;
  /** `CRAWLER_HOST_MAP`: every host name → its own loopback address. */
  hostMap: string;
}

export const INTERNET_DEFAULTS: Required<InternetOptions> = {
  seed: 1,
  hosts: 50,
  pages: 3000,
  links: 20,
  sameHostShare: 0.7,
  medianLatencyMs: 300,
  hostSigma: 0.4,
  requestSigma: 0.4,
  tailShare: 0.03,
  maxLatencyMs: 8000,
  deadShare: 0.02,
  dripShare: 0.02,
  dripMs: 15_000,
  medianBytes: 20_000,
  bytesSigma: 0.7,
  bigShare: 0.01,
  maxBytes: 2 * 1024 * 1024,
  e500Share: 0.01,
  e503Share: 0.01,
  e429Share: 0.01,
  resetShare: 0.005,
  archiveShare: 0.1,
  disallowShare: 0.2,
  crawlDelayShare: 0.04,
  crawlDelaySec: 1,
};

/** Smallest page and the start of the big pages (bytes). */
export const MIN_PAGE_BYTES = 5000;
export const BIG_PAGE_BYTES = 500_000;

/** The largest number of hosts (127.0.0.10..127.0.0.249, then 127.0.1.10...: 240 per /24). */
const MAX_HOSTS = 240 * 250;

/** Loopback address of host k. */
export function hostAddress(k: number): string {
  return `127.0.${Math.floor(k / 240)}.${10 + (k % 240)}`;
}

/** Uniform draws in [0, 1) for (seed, salt, index): independent streams per page and per purpose. */
function draws(seed: number, salt: number, index: number): () => number {
  const mixed =
    (Math.imul(seed ^ 0x5bd1e995, 0x9e3779b1) ^ Math.imul(index + 1, 0x85ebca6b) ^ Math.imul(salt, 0xc2b2ae35)) >>> 0;
  const r = prng(mixed);
  r();
  return r;
}

/** A standard normal draw (Box–Muller) from two uniforms. */
function normal(r: () => number): number {
  const u = Math.max(r(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * r());
}

/** `count` distinct host indexes out of `hosts`, in a seeded order, after skipping `skip` of them. */
function pick(order: number[], skip: number, count: number): Set<number> {
  return new Set(order.slice(skip, skip + count));
}

function hostProfiles(o: Required<InternetOptions>): HostProfile[] {
  const order = Array.from({ length: o.hosts }, (_, k) => k);
  const r = draws(o.seed, 1, 0);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [order[i], order[j]] = [order[j] as number, order[i] as number];
  }
  const count = (share: number) => Math.round(o.hosts * share);
  const dead = pick(order, 0, count(o.deadShare));
  const drip = pick(order, dead.size, count(o.dripShare));
  // Robots rules from the other end of the order, so they overlap the dead and drip hosts only on tiny sites.
  const reversed = [...order].reverse();
  const disallow = pick(reversed, 0, count(o.disallowShare));
  const delay = pick(reversed, disallow.size, count(o.crawlDelayShare));
  return Array.from({ length: o.hosts }, (_, k) => {
    const h = draws(o.seed, 2, k);
    return {
      index: k,
      name: `web${String(k).padStart(2, '0')}.test`,
      address: hostAddress(k),
      kind: dead.has(k) ? 'dead' : drip.has(k) ? 'drip' : 'ok',
      medianLatencyMs: o.medianLatencyMs * Math.exp(o.hostSigma * normal(h)),
      disallowArchive: disallow.has(k),
      ...(delay.has(k) ? { crawlDelaySec: o.crawlDelaySec } : {}),
    };
  });
}

/** The model of a simulated internet with these options, its hosts serving on `port`. */
export function internetGeometry(options: InternetOptions = {}, port = 0): InternetGeometry {
  const o: Required<InternetOptions> = { ...INTERNET_DEFAULTS, ...options };
  if (!Number.isInteger(o.hosts) || o.hosts < 1 || o.hosts > MAX_HOSTS)
    throw new Error(`internet: hosts from 1 to ${MAX_HOSTS}`);
  if (!Number.isInteger(o.pages) || o.pages < o.hosts) throw new Error('internet: at least one page per host');
  const hosts = hostProfiles(o);
  const cache = new Map<number, PageProfile>();
  const page = (n: number): PageProfile => {
    const hit = cache.get(n);
    if (hit) return hit;
    const host = hosts[n % o.hosts] as HostProfile;
    const r = draws(o.seed, 3, n);
    const big = r() < o.bigShare;
    const bytes = big
      ? BIG_PAGE_BYTES * (o.maxBytes / BIG_PAGE_BYTES) ** r()
      : Math.min(BIG_PAGE_BYTES, Math.max(MIN_PAGE_BYTES, o.medianBytes * Math.exp(o.bytesSigma * normal(r))));
    let latency = host.medianLatencyMs * Math.exp(o.requestSigma * normal(r));
    if (r() < o.tailShare) latency *= 3 + 7 * r();
    const e = r();
    let error: PageError = 'none';
    let edge = 0;
    for (const [kind, share] of [
      ['e500', o.e500Share],
      ['e503', o.e503Share],
      ['e429', o.e429Share],
      ['reset', o.resetShare],
    ] as const) {
      edge += share;
      if (e < edge) {
        error = kind;
        break;
      }
    }
    const archive = r() < o.archiveShare;
    const p: PageProfile = {
      n,
      host: host.index,
      path: archive ? `/archive/${n}` : `/p/${n}`,
      bytes: Math.round(bytes),
      latencyMs: Math.round(Math.min(o.maxLatencyMs, latency)),
      error,
    };
    cache.set(n, p);
    return p;
  };
  const perHost = (k: number) => Math.floor((o.pages - 1 - k) / o.hosts) + 1;
  const linksOf = (n: number): number[] => {
    const r = draws(o.seed, 4, n);
    const k = n % o.hosts;
    return Array.from({ length: o.links }, () =>
      r() < o.sameHostShare ? k + o.hosts * Math.floor(r() * perHost(k)) : Math.floor(r() * o.pages),
    );
  };
  const hostOf = (n: number) => hosts[n % o.hosts] as HostProfile;
  const good = (n: number) => {
    const e = page(n).error;
    return hostOf(n).kind !== 'dead' && e !== 'e500' && e !== 'reset';
  };
  const allowed = (n: number) => {
    const h = hostOf(n);
    return h.kind !== 'dead' && !(h.disallowArchive && page(n).path.startsWith('/archive/'));
  };
  return {
    options: o,
    hosts,
    hostNames: hosts.map((h) => h.name),
    pages: o.pages,
    port,
    page,
    hostOf,
    url: (n) => `http://${hostOf(n).name}:${port}${page(n).path}`,
    linksOf,
    good,
    allowed,
    robotsTxt(k) {
      const h = hosts[k] as HostProfile;
      const rules = h.disallowArchive ? 'Disallow: /archive/\n' : 'Disallow:\n';
      const delay = h.crawlDelaySec !== undefined ? `Crawl-delay: ${h.crawlDelaySec}\n` : '';
      return `User-agent: *\n${rules}${delay}`;
    },
    reachable(seeds, maxdepth, obeyRobots = false) {
      const start = (typeof seeds === 'number' ? [seeds] : [...seeds]).filter((n) => !obeyRobots || allowed(n));
      const seen = new Set(start);
      let frontier = start;
      for (let d = 0; d < maxdepth; d++) {
        const next: number[] = [];
        for (const n of frontier) {
          if (!good(n)) continue;
          for (const m of linksOf(n)) {
            if (seen.has(m) || (obeyRobots && !allowed(m))) continue;
            seen.add(m);
            next.push(m);
          }
        }
        frontier = next;
      }
      return seen;
    },
    hostMap: hosts.map((h) => `${h.name}=${h.address}`).join(','),
  };
}

/**
 * The crawler's forward proxies (docs/proxies.md): {@link ProxyEndpoint}s, named without their credentials
 * (lib/crawl/fetch/proxy-config.ts parses them), and the {@link ProxyPool} that picks one per domain. A domain sticks
 * to its proxy for a session (as Crawlee's SessionPool does: a site sees one address for a while, not a new one per
 * request), moves on after a failure through that proxy, and a proxy that fails repeatedly rests; new sessions go to
 * the healthy proxy that holds the fewest, so the split over healthy proxies is even.
 */

/** One forward proxy. `name` is what logs, errors and stats show: never the credentials. */
export interface ProxyEndpoint {
  /** `host:port`, or the URL's `#fragment` when it has one (`http://u:p@10.0.0.5:3128#eu-1` → `eu-1`). */
  readonly name: string;
  /** The URL undici's ProxyAgent connects with, credentials included. Never logged. */
  readonly url: string;
}

/** Options of {@link ProxyPool}. */
export interface ProxyPoolOptions {
  /**
   * How long a domain keeps its proxy (unless a failure through it moves the domain on first).
   * @default 600000
   */
  sessionMs?: number;
  /**
   * Failures through a proxy in a row (no success between them) that send it to rest.
   * @default 3
   */
  failuresToRest?: number;
  /**
   * How long a proxy rests before it takes new sessions again.
   * @default 60000
   */
  restMs?: number;
  /**
   * Most sessions held; past it the oldest is forgotten (its domain picks again on its next request).
   * @default 100000
   */
  maxSessions?: number;
  /** @default Date.now */
  now?: () => number;
}

interface ProxyState {
  readonly endpoint: ProxyEndpoint;
  /** Failures in a row. */
  streak: number;
  /** Resting until then (epoch ms); 0: healthy. */
  restUntil: number;
  /** Live sessions held. */
  sessions: number;
}

interface Session {
  readonly proxy: ProxyState;
  readonly until: number;
}

/** Picks a proxy per domain (see the module doc). In-process state: each crawler process keeps its own. */
export class ProxyPool {
  readonly #proxies: ProxyState[];
  readonly #byName = new Map<string, ProxyState>();
  readonly #sessions = new Map<string, Session>();
  readonly #sessionMs: number;
  readonly #failuresToRest: number;
  readonly #restMs: number;
  readonly #maxSessions: number;
  readonly #now: () => number;
  /** Where the search for the least-loaded proxy starts, turning so that ties are spread too. */
  #turn = 0;

  constructor(proxies: readonly ProxyEndpoint[], options: ProxyPoolOptions = {}) {
    if (proxies.length === 0) throw new RangeError('a proxy pool needs at least one proxy');
    this.#proxies = proxies.map((endpoint) => ({ endpoint, streak: 0, restUntil: 0, sessions: 0 }));
    for (const p of this.#proxies) this.#byName.set(p.endpoint.name, p);
    this.#sessionMs = options.sessionMs ?? 600_000;
    this.#failuresToRest = options.failuresToRest ?? 3;
    this.#restMs = options.restMs ?? 60_000;
    this.#maxSessions = options.maxSessions ?? 100_000;
    this.#now = options.now ?? Date.now;
  }

  /** How many proxies the pool holds: the most a fetch tries before it gives up on proxies. */
  get size(): number {
    return this.#proxies.length;
  }

  /**
   * The proxy for a request to `domain`: its session's while that lasts and its proxy is healthy, else a new session
   * on the healthy proxy holding the fewest. When every proxy not in `exclude` rests, the one whose rest ends first
   * (a fleet whose every proxy failed still tries). Undefined when `exclude` holds them all.
   * @param exclude names of proxies this fetch already failed through
   */
  pick(domain: string, exclude?: ReadonlySet<string>): ProxyEndpoint | undefined {
    const now = this.#now();
    this.#sweep(now);
    const session = this.#sessions.get(domain);
    if (session) {
      const p = session.proxy;
      if (session.until > now && p.restUntil <= now && !exclude?.has(p.endpoint.name)) return p.endpoint;
      this.#drop(domain, session);
    }
    let best: ProxyState | undefined;
    const n = this.#proxies.length;
    for (let k = 0; k < n; k++) {
      const p = this.#proxies[(this.#turn + k) % n] as ProxyState;
      if (exclude?.has(p.endpoint.name)) continue;
      if (best === undefined || rank(p, now) < rank(best, now)) best = p;
    }
    this.#turn = (this.#turn + 1) % n;
    if (best === undefined) return undefined;
    if (best.restUntil <= now) this.#open(domain, best, now);
    return best.endpoint;
  }

  /** A request through `name` got its answer: the proxy works. */
  succeeded(name: string): void {
    const p = this.#byName.get(name);
    if (p) p.streak = 0;
  }

  /**
   * A request to `domain` through `name` failed for a reason the proxy may be behind: the domain moves to another
   * proxy, and the proxy rests after {@link ProxyPoolOptions.failuresToRest} of these in a row.
   */
  failed(name: string, domain: string): void {
    const p = this.#byName.get(name);
    if (!p) return;
    const session = this.#sessions.get(domain);
    if (session?.proxy === p) this.#drop(domain, session);
    p.streak++;
    if (p.streak >= this.#failuresToRest) {
      p.streak = 0;
      p.restUntil = this.#now() + this.#restMs;
    }
  }

  /** Whether `name` rests now (tests, stats). */
  resting(name: string): boolean {
    return (this.#byName.get(name)?.restUntil ?? 0) > this.#now();
  }

  /**
   * Ends the sessions past their time, so they stop counting towards their proxy's load. Sessions all last
   * `sessionMs` and are inserted when opened, so the map's insertion order is their expiry order.
   */
  #sweep(now: number): void {
    for (const [domain, session] of this.#sessions) {
      if (session.until > now) return;
      this.#drop(domain, session);
    }
  }

  #open(domain: string, proxy: ProxyState, now: number): void {
    if (this.#sessions.size >= this.#maxSessions) {
      const oldest = this.#sessions.keys().next();
      if (!oldest.done) this.#drop(oldest.value, this.#sessions.get(oldest.value) as Session);
    }
    this.#sessions.set(domain, { proxy, until: now + this.#sessionMs });
    proxy.sessions++;
  }

  #drop(domain: string, session: Session): void {
    this.#sessions.delete(domain);
    session.proxy.sessions--;
  }
}

/** Lower is better: healthy before resting, then fewer sessions; resting ones by when their rest ends. */
function rank(p: ProxyState, now: number): number {
  return p.restUntil > now ? Number.MAX_SAFE_INTEGER / 2 + (p.restUntil - now) : p.sessions;
}

/**
 * robots.txt (RFC 9309, docs/contract.md behaviour 7, docs/design.md §5): fetched once per origin, cached in
 * the fleet-wide store (Redis) and in process for this crawler, parsed with `robots-parser`.
 *
 * Outcomes by the robots.txt response:
 * - 2xx: the rules of the first {@link RobotsCacheOptions.maxBytes} bytes (UTF-8) apply.
 * - 4xx ("unavailable", RFC 9309 §2.3.1.3): everything is allowed. Except 429, which asks us to slow
 *   down, so it is treated as unreachable, as Google does.
 * - 5xx, 429 or no response at all (a {@link FetchError}: timeout, connection, DNS, a malformed response;
 *   "unreachable", §2.3.1.4): everything is disallowed (fail closed), cached for a shorter time so the
 *   site is asked again soon.
 * - An address our SSRF guard refuses (`ALLOW_PRIVATE_NETWORKS` off): disallowed too, with the guard's own
 *   reason, and never stored for the fleet. That is our policy, not the site's answer: a crawler started with the
 *   policy changed must not read it back.
 * - Any other status (1xx, a 3xx the fetcher did not follow): treated as unavailable, allow all.
 *
 * Redirects are followed by the {@link Fetcher} (every hop SSRF-checked), five of them whatever the
 * fetcher's own limit (§2.3.1.2); the rules then apply to the origin whose robots.txt was asked for.
 * Redirects that reach no robots.txt within five (a loop, a longer chain) leave it unavailable: allow all
 * (§2.3.1.2). `/robots.txt` itself is always allowed (§2.2.2).
 */
import robotsParserCjs from 'robots-parser';
import type { RobotsStore } from '../../ports.ts';
import { InvalidUrlError } from '../extract/url.ts';
import { FetchError, type Fetcher } from '../types.ts';

// The package is CommonJS (`module.exports = fn`) but its types declare an ES default export, which
// NodeNext types as `{ default: fn }`; at run time the default import is the function itself.
const robotsParser = robotsParserCjs as unknown as typeof robotsParserCjs.default;
type Robot = ReturnType<typeof robotsParser>;

const DISALLOWED = 'robots.txt disallows this URL';

/** Redirects followed to find robots.txt: "at least five consecutive redirects" (RFC 9309 §2.3.1.2). */
const MAX_REDIRECTS = 5;

/**
 * The status recorded (and stored) for a robots.txt whose redirects reached none within {@link MAX_REDIRECTS}:
 * a 3xx with no robots.txt behind it is "unavailable" (§2.3.1.2), allow all. 310 is not an HTTP status, so it
 * cannot be mistaken for one the site sent.
 */
const REDIRECTS_EXHAUSTED = 310;

/** The reason for a fail-closed refusal: what robots.txt answered (status 0: no response at all). */
function unreachableReason(status: number): string {
  const what = status === 0 ? 'no response' : `HTTP ${status}`;
  return `robots.txt could not be read (${what}); failing closed, so the URL is not fetched`;
}

/** The answer for one URL. */
export interface RobotsDecision {
  allowed: boolean;
  /**
   * Why a URL is refused: robots.txt disallows it, or robots.txt could not be read and the origin is
   * disallowed by failing closed (RFC 9309 §2.3.1.4), or our SSRF guard refused its address (the guard's
   * reason). Undefined when allowed.
   */
  reason?: string;
  /** The `Crawl-delay` of the group that applies, in ms, when it sets a positive one. */
  crawlDelayMs?: number;
}

export interface RobotsCacheOptions {
  /** The fleet-wide cache (lib/redis/robots-store.ts; the caller owns the connection). */
  store: RobotsStore;
  /** Fetches robots.txt (follows redirects, SSRF guard, timeouts). */
  fetcher: Fetcher;
  /**
   * Obey robots.txt; when false every URL is allowed and nothing is fetched.
   * @default true
   */
  obey?: boolean;
  /**
   * How long a fetched robots.txt (2xx or 4xx) is trusted, ms. RFC 9309 §2.4 asks for at most 24 h.
   * @default 3_600_000 (1 h)
   */
  ttlMs?: number;
  /**
   * How long an unreachable robots.txt (5xx, 429, no response) keeps its origin disallowed before it
   * is asked again, ms. An address the SSRF guard refused is held this long in process only.
   * @default 300_000 (5 min)
   */
  errorTtlMs?: number;
  /**
   * Bytes of robots.txt that are parsed (and stored); the rest is ignored. RFC 9309 §2.5 requires at
   * least 500 KiB.
   * @default 512_000 (500 KiB)
   */
  maxBytes?: number;
  /**
   * Origins kept parsed in process (LRU).
   * @default 1000
   */
  localEntries?: number;
  /** @default Date.now */
  now?: () => number;
}

/** What is known about one origin's robots.txt. */
interface OriginRules {
  /** The robots.txt status; 0 when there was no response. */
  status: number;
  /** Epoch ms after which it must be fetched again. */
  expiresAt: number;
  /** Why the origin is disallowed when {@link unreachableReason} would not say it (our SSRF guard refused it). */
  reason?: string;
  /** Parsed rules, for a 2xx. */
  robot?: Robot;
  /** The product tokens of its groups (lower case, `*` excluded), for a 2xx. */
  tokens?: string[];
  /** User-Agent → the group token it falls in. */
  groups?: Map<string, string>;
}

type Verdict = 'rules' | 'allow_all' | 'disallow_all';

function verdictOf(status: number): Verdict {
  if (status >= 200 && status < 300) return 'rules';
  if (status === 0 || status === 429 || status >= 500) return 'disallow_all';
  return 'allow_all';
}

const LINE_BREAK = /\r\n|\r|\n/;
const UTF8 = new TextDecoder('utf-8');

/** robots-parser's user-agent normalization: lower case, the version after '/' dropped. */
function productToken(value: string): string {
  const lower = value.toLowerCase();
  const slash = lower.indexOf('/');
  return (slash < 0 ? lower : lower.slice(0, slash)).trim();
}

/** The distinct product tokens of the file's `user-agent` lines, `*` excluded. */
function groupTokens(body: string): string[] {
  const tokens = new Set<string>();
  for (const line of body.split(LINE_BREAK)) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const hash = line.indexOf('#');
    if (hash >= 0 && hash < colon) continue;
    if (line.slice(0, colon).trim().toLowerCase() !== 'user-agent') continue;
    const token = productToken(line.slice(colon + 1, hash < 0 ? undefined : hash));
    if (token.length > 0 && token !== '*') tokens.add(token);
  }
  return [...tokens];
}

function isTokenChar(c: number): boolean {
  // a-z (the User-Agent is lower-cased first), 0-9, '-', '_'
  return (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 45 || c === 95;
}

/**
 * The group a crawler's User-Agent falls in: the longest group token that appears in the User-Agent
 * as a whole word (case-insensitive), else `*`. So `MyBot/1.0 (+https://…)` and
 * `Mozilla/5.0 (compatible; MyBot/1.0)` both match `User-agent: mybot`, and `mybot` does not match
 * `User-agent: bot`. RFC 9309 §2.2.1 matches the crawler's product token; a full User-Agent string
 * contains it, which is how Scrapy's Protego matches too.
 */
function groupFor(userAgent: string, tokens: readonly string[]): string {
  const ua = userAgent.toLowerCase();
  let best = '*';
  for (const token of tokens) {
    if (token.length <= best.length && best !== '*') continue;
    for (let at = ua.indexOf(token); at >= 0; at = ua.indexOf(token, at + 1)) {
      const end = at + token.length;
      if (
        (at === 0 || !isTokenChar(ua.charCodeAt(at - 1))) &&
        (end === ua.length || !isTokenChar(ua.charCodeAt(end)))
      ) {
        best = token;
        break;
      }
    }
  }
  return best;
}

/** The stored value: `<status> <expiresAt>\n<body>`; the body only for a 2xx. */
function encode(status: number, expiresAt: number, body: string): string {
  return `${status} ${expiresAt}\n${body}`;
}

function decode(value: string): { status: number; expiresAt: number; body: string } | undefined {
  const newline = value.indexOf('\n');
  const space = value.indexOf(' ');
  if (newline < 0 || space < 0 || space > newline) return undefined;
  const status = Number(value.slice(0, space));
  const expiresAt = Number(value.slice(space + 1, newline));
  if (!Number.isInteger(status) || !Number.isFinite(expiresAt)) return undefined;
  return { status, expiresAt, body: value.slice(newline + 1) };
}

/** Groups per origin whose matching result is remembered; a crawler uses very few User-Agents. */
const MAX_GROUPS_REMEMBERED = 64;

/** `url` parsed, when it is an absolute http(s) URL. @throws {InvalidUrlError} otherwise. */
function parseTarget(url: string): URL {
  const parsed = URL.parse(url);
  if (parsed === null || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:'))
    throw new InvalidUrlError(url, 'not an absolute http(s) URL');
  return parsed;
}

/**
 * Answers "may this URL be fetched, and how slowly?" from the URL's origin's robots.txt. One fetch
 * per origin per TTL for the whole fleet: the first crawler to need it fetches it and stores it in
 * the fleet-wide store ({@link RobotsStore}, with the TTL); the others read it there. Each crawler also keeps the
 * parsed rules of recent origins in process until the stored copy expires, and concurrent checks of
 * one origin share one lookup.
 *
 * Store errors propagate (the caller releases the request). A robots.txt fetched but not stored
 * because the store failed is still kept in process.
 */
export class RobotsCache {
  readonly #store: RobotsStore;
  readonly #fetcher: Fetcher;
  readonly #obey: boolean;
  readonly #ttlMs: number;
  readonly #errorTtlMs: number;
  readonly #maxBytes: number;
  readonly #localEntries: number;
  readonly #now: () => number;
  readonly #local = new Map<string, OriginRules>();
  readonly #pending = new Map<string, Promise<OriginRules>>();

  constructor(options: RobotsCacheOptions) {
    this.#store = options.store;
    this.#fetcher = options.fetcher;
    this.#obey = options.obey ?? true;
    this.#ttlMs = options.ttlMs ?? 3_600_000;
    this.#errorTtlMs = options.errorTtlMs ?? 300_000;
    this.#maxBytes = options.maxBytes ?? 512_000;
    this.#localEntries = options.localEntries ?? 1000;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Whether `url` may be fetched by a crawler sending `userAgent`, and the `Crawl-delay` that applies
   * to it. The robots.txt fetch (on a miss) is sent with the same User-Agent, through the proxy group `proxy` (the
   * asking crawl's `attrs.proxy`; a lookup of the origin already under way is shared whatever its group).
   *
   * @throws {InvalidUrlError} when `url` is not an absolute http(s) URL.
   * @throws {FetchError} `proxy_*` when robots.txt could not be fetched through the proxies (nothing is cached then).
   */
  async check(url: string, userAgent: string, proxy?: string): Promise<RobotsDecision> {
    if (!this.#obey) return { allowed: true };
    const parsed = parseTarget(url);
    if (parsed.pathname === '/robots.txt') return { allowed: true };
    return this.#decide(parsed, await this.#rules(parsed.origin, userAgent, proxy), userAgent);
  }

  /**
   * {@link check}'s answer at once, when this process holds the origin's rules (undefined: ask {@link check}, which
   * may read the fleet-wide store or fetch robots.txt). The crawler asks this first: most pages are on an origin it has seen.
   *
   * @throws {InvalidUrlError} when `url` is not an absolute http(s) URL.
   */
  checkNow(url: string, userAgent: string): RobotsDecision | undefined {
    if (!this.#obey) return { allowed: true };
    const parsed = parseTarget(url);
    if (parsed.pathname === '/robots.txt') return { allowed: true };
    const rules = this.#localRules(parsed.origin, this.#now());
    return rules === undefined ? undefined : this.#decide(parsed, rules, userAgent);
  }

  #decide(parsed: URL, rules: OriginRules, userAgent: string): RobotsDecision {
    const verdict = verdictOf(rules.status);
    if (verdict === 'allow_all') return { allowed: true };
    if (verdict !== 'rules' || rules.robot === undefined)
      return { allowed: false, reason: rules.reason ?? unreachableReason(rules.status) };

    let group = rules.groups?.get(userAgent);
    if (group === undefined) {
      group = groupFor(userAgent, rules.tokens ?? []);
      rules.groups ??= new Map();
      if (rules.groups.size >= MAX_GROUPS_REMEMBERED) rules.groups.clear();
      rules.groups.set(userAgent, group);
    }
    // undefined: the URL is not on this robots.txt's origin, which cannot happen here.
    const allowed = rules.robot.isAllowed(parsed.href, group) !== false;
    const decision: RobotsDecision = allowed ? { allowed } : { allowed, reason: DISALLOWED };
    const delay = rules.robot.getCrawlDelay(group);
    if (delay !== undefined && Number.isFinite(delay) && delay > 0) decision.crawlDelayMs = Math.round(delay * 1000);
    return decision;
  }

  /** The origin's rules held in process and not expired (moved to the most recent end), else undefined. */
  #localRules(origin: string, now: number): OriginRules | undefined {
    const local = this.#local.get(origin);
    if (local === undefined) return undefined;
    this.#local.delete(origin);
    if (local.expiresAt <= now) return undefined;
    this.#local.set(origin, local);
    return local;
  }

  /** The origin's rules: in process, else from the fleet-wide store, else fetched (one lookup per origin at a time). */
  async #rules(origin: string, userAgent: string, proxy: string | undefined): Promise<OriginRules> {
    const local = this.#localRules(origin, this.#now());
    if (local !== undefined) return local;
    let pending = this.#pending.get(origin);
    if (pending === undefined) {
      pending = this.#load(origin, userAgent, proxy).finally(() => this.#pending.delete(origin));
      this.#pending.set(origin, pending);
    }
    return pending;
  }

  async #load(origin: string, userAgent: string, proxy: string | undefined): Promise<OriginRules> {
    const stored = await this.#store.get(origin);
    const cached = stored === undefined ? undefined : decode(stored);
    if (cached !== undefined && cached.expiresAt > this.#now()) {
      const rules = this.#parse(origin, cached.status, cached.expiresAt, cached.body);
      this.#remember(origin, rules);
      return rules;
    }
    const { status, body, blocked } = await this.#fetch(origin, userAgent, proxy);
    const ttl = verdictOf(status) === 'disallow_all' ? this.#errorTtlMs : this.#ttlMs;
    const expiresAt = this.#now() + ttl;
    const rules = this.#parse(origin, status, expiresAt, body);
    if (blocked !== undefined) rules.reason = `robots.txt not fetched: ${blocked}`;
    // Remembered before storing, so a failed SET does not cost the origin a second fetch.
    this.#remember(origin, rules);
    // Held in process only: this crawler's policy cannot change while it runs, another crawler's may differ.
    if (blocked === undefined) await this.#store.set(origin, encode(status, expiresAt, body), ttl);
    return rules;
  }

  /** The robots.txt answer; `blocked` is the SSRF guard's reason when it refused an address on the way. */
  async #fetch(
    origin: string,
    userAgent: string,
    proxy: string | undefined,
  ): Promise<{ status: number; body: string; blocked?: string }> {
    try {
      const url = `${origin}/robots.txt`;
      const response = await this.#fetcher.fetch({ url, userAgent, maxRedirects: MAX_REDIRECTS, proxy });
      if (verdictOf(response.status) !== 'rules') return { status: response.status, body: '' };
      // RFC 9309 §2.3: UTF-8; the decoder drops a BOM, which would otherwise hide the first line.
      const bytes = response.body.length > this.#maxBytes ? response.body.subarray(0, this.#maxBytes) : response.body;
      return { status: response.status, body: UTF8.decode(bytes) };
    } catch (error) {
      if (!(error instanceof FetchError)) throw error;
      // Our proxy failed, not the site: nothing is learnt about its robots.txt, so nothing is cached (fleet-wide a
      // disallow-all would stop every crawler), and the page fails with the proxy's reason.
      if (error.kind.startsWith('proxy_')) throw error;
      if (error.kind === 'too_many_redirects') return { status: REDIRECTS_EXHAUSTED, body: '' };
      if (error.kind === 'blocked_address') return { status: 0, body: '', blocked: error.message };
      return { status: 0, body: '' };
    }
  }

  #parse(origin: string, status: number, expiresAt: number, body: string): OriginRules {
    if (verdictOf(status) !== 'rules') return { status, expiresAt };
    return { status, expiresAt, robot: robotsParser(`${origin}/robots.txt`, body), tokens: groupTokens(body) };
  }

  #remember(origin: string, rules: OriginRules): void {
    this.#local.delete(origin);
    this.#local.set(origin, rules);
    if (this.#local.size > this.#localEntries) this.#local.delete(this.#local.keys().next().value as string);
  }
}

/**
 * Every request a rendered page makes (docs/spiders-browser.md "The same rules as every fetch"): Chromium fetches
 * nothing itself. Each request is intercepted (playwright `context.route`) and either refused or fetched by the
 * crawler's own fetcher and handed to the page (`route.fulfill`), so it passes the same SSRF guard as every fetch (on
 * the address the socket connects to, on every redirect hop: a page's script cannot reach loopback, a private network
 * or the metadata endpoint), the body cap, and for the page's own origin robots.txt and a bound on requests at once.
 * Images, fonts and media are refused by default, and so is any method other than GET and HEAD (a crawler submits
 * nothing). The page's budget of requests and bytes is counted here: past it the page fails with the reason.
 */
import type { BrowserContext, Page, Request, Route } from 'playwright-core';
import type { RobotsCache } from '../fetch/robots.ts';
import { FetchError, type Fetcher, type FetchRequest, type FetchResult } from '../types.ts';

/** The limits of one rendered page. */
export interface PageBudget {
  /** Requests the page may make, its document included. */
  maxRequests: number;
  /** Body bytes the page may load, its document included. */
  maxBytes: number;
}

/** Headers Chromium must not be handed back: the body is already decoded and whole. */
const HOP_HEADERS = new Set(['content-encoding', 'content-length', 'transfer-encoding', 'connection', 'keep-alive']);

/** Requests to the page's own origin in flight at once, per page: a rendered page never floods its site. */
const SAME_ORIGIN_PARALLEL = 2;

/** The state of one page being rendered, as the route handler sees it. */
export class RenderState {
  requests = 0;
  bytes = 0;
  /** Requests refused (blocked address, robots.txt, method, budget), first ones kept for the log. */
  readonly refused: string[] = [];
  /** Why the page failed (a budget), once it did. */
  failed: string | undefined;
  /** Aborts the fetches of this page when it ends. */
  readonly abort = new AbortController();
  readonly #onFail: (reason: string) => void;
  #sameOrigin = 0;
  readonly #sameOriginWaiting: (() => void)[] = [];
  /** The document, fetched before the page opened: served once to the navigation that asks for it. */
  document: FetchResult | undefined;

  readonly origin: string;
  readonly request: FetchRequest;
  readonly budget: PageBudget;

  constructor(origin: string, request: FetchRequest, budget: PageBudget, onFail: (reason: string) => void) {
    this.origin = origin;
    this.request = request;
    this.budget = budget;
    this.#onFail = onFail;
  }

  fail(reason: string): void {
    if (this.failed !== undefined) return;
    this.failed = reason;
    this.abort.abort(new Error(reason));
    this.#onFail(reason);
  }

  refuse(url: string, why: string): void {
    if (this.refused.length < 20) this.refused.push(`${url}: ${why}`);
  }

  async sameOriginTurn(): Promise<() => void> {
    while (this.#sameOrigin >= SAME_ORIGIN_PARALLEL) {
      await new Promise<void>((resolve) => this.#sameOriginWaiting.push(resolve));
    }
    this.#sameOrigin++;
    return () => {
      this.#sameOrigin--;
      this.#sameOriginWaiting.shift()?.();
    };
  }
}

export interface BrowserRoutesOptions {
  fetcher: Fetcher;
  /** robots.txt for requests to the page's own origin; undefined when not obeyed. */
  robots?: Pick<RobotsCache, 'check'>;
  /** Playwright resource types refused (`image`, `font`, `media`, `stylesheet`...). */
  blockResources: ReadonlySet<string>;
}

/**
 * Request interception for pages of a context: `states` says which page a request belongs to (a page the crawler did
 * not open, a popup, gets nothing). Installed once per context (lib/crawl/browser/pool.ts `prepare`).
 */
export class BrowserRoutes {
  readonly #o: BrowserRoutesOptions;
  readonly #states = new WeakMap<Page, RenderState>();

  constructor(options: BrowserRoutesOptions) {
    this.#o = options;
  }

  track(page: Page, state: RenderState): void {
    this.#states.set(page, state);
  }

  async install(context: BrowserContext): Promise<void> {
    await context.route('**/*', (route, request) => this.#handle(route, request));
    // WebSockets are never served (request interception does not see them; the black-hole proxy would refuse them).
    await context.routeWebSocket(/.*/, (ws) => ws.close({ code: 1008, reason: 'refused by the crawler' }));
    // Popups (window.open) are not the crawler's pages: closed at once.
    context.on('page', (page) => {
      if (!this.#states.has(page)) {
        setImmediate(() => {
          if (!this.#states.has(page)) void page.close().catch(() => undefined);
        });
      }
    });
  }

  async #handle(route: Route, request: Request): Promise<void> {
    let state: RenderState | undefined;
    try {
      state = this.#states.get(request.frame().page());
    } catch {
      state = undefined; // a service worker's or a closed frame's request
    }
    if (state === undefined || state.failed !== undefined) return abort(route);
    const url = request.url();
    state.requests++;
    if (state.requests > state.budget.maxRequests) {
      state.fail(`the page made more than ${state.budget.maxRequests} requests (BROWSER_MAX_REQUESTS)`);
      return abort(route);
    }
    const method = request.method();
    if (method !== 'GET' && method !== 'HEAD') {
      state.refuse(url, `method ${method}`);
      return abort(route);
    }
    if (this.#o.blockResources.has(request.resourceType())) return abort(route);
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return abort(route);
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:') return abort(route);
    const doc = state.document;
    if (doc !== undefined && request.isNavigationRequest() && url === doc.url) {
      state.document = undefined;
      return this.#fulfill(route, state, doc);
    }
    const sameOrigin = target.origin === state.origin;
    let done: (() => void) | undefined;
    try {
      if (sameOrigin) {
        if (this.#o.robots) {
          const verdict = await this.#o.robots.check(url, state.request.userAgent, state.request.proxy);
          if (!verdict.allowed) {
            state.refuse(url, 'robots.txt');
            return abort(route);
          }
        }
        done = await state.sameOriginTurn();
      }
      const result = await this.#o.fetcher.fetch(
        {
          url,
          userAgent: state.request.userAgent,
          headers: state.request.headers,
          cookie: state.request.cookie,
          // The page's requests leave through the page's proxy group, as its document did.
          proxy: state.request.proxy,
        },
        state.abort.signal,
      );
      await this.#fulfill(route, state, result);
    } catch (error) {
      state.refuse(url, error instanceof FetchError ? `${error.kind}: ${error.message}` : String(error));
      await abort(route, error instanceof FetchError && error.kind === 'blocked_address');
    } finally {
      done?.();
    }
  }

  async #fulfill(route: Route, state: RenderState, result: FetchResult): Promise<void> {
    state.bytes += result.body.length;
    if (state.bytes > state.budget.maxBytes) {
      state.fail(`the page loaded more than ${state.budget.maxBytes} bytes (BROWSER_MAX_BYTES)`);
      return abort(route);
    }
    const headers: Record<string, string> = {};
    for (const [name, values] of Object.entries(result.headers)) {
      if (!HOP_HEADERS.has(name)) headers[name] = values.join(name === 'set-cookie' ? '\n' : ', ');
    }
    await route.fulfill({ status: result.status, headers, body: result.body }).catch(() => undefined);
  }
}

/** Refuses a request (the page sees a network error); a page that is gone already is no error. */
function abort(route: Route, blocked = false): Promise<void> {
  return route.abort(blocked ? 'addressunreachable' : 'blockedbyclient').catch(() => undefined);
}

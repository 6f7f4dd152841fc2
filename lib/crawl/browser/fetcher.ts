/**
 * The {@link Fetcher} of browser workers (docs/spiders-browser.md): the document is fetched as every page is (the
 * crawler's fetcher: SSRF guard on every hop, redirects, the body cap), then, when it is an HTML page that answered
 * 2xx, loaded in headless Chromium (lib/crawl/browser/pool.ts) with every request the page makes answered by the crawler
 * (lib/crawl/browser/routes.ts). The result is the rendered page: the DOM serialised as HTML (`text`, UTF-8), the final URL,
 * the document's status and headers; link extraction then runs on it as on any page.
 *
 * A page that overruns its budget (time, requests, bytes), whose renderer runs out of memory and crashes, or whose
 * browser dies or stops answering, fails that try with a {@link BrowserBudgetError} (lib/crawl/failure.ts `budget`:
 * retried, then a `success:false` page with the reason); the browser is launched again for the next page.
 */

import type { RobotsCache } from '../fetch/robots.ts';
import { SpiderBudgetError } from '../spiders/sandbox.ts';
import type { Fetcher, FetchRequest, FetchResult } from '../types.ts';
import { BrowserPool, type BrowserPoolOptions } from './pool.ts';
import { BrowserRoutes, type PageBudget, RenderState } from './routes.ts';

/** A rendered page overran its budget, or its browser failed: a failed try (lib/crawl/failure.ts `budget`). */
class BrowserBudgetError extends SpiderBudgetError {}

export interface BrowserFetcherOptions extends Omit<BrowserPoolOptions, 'prepare'> {
  /** The crawler's fetcher: the document and every request of the page go through it. */
  fetcher: Fetcher;
  robots?: Pick<RobotsCache, 'check'>;
  /** Resource types refused. @default image, font, media */
  blockResources?: Iterable<string>;
  /** Longest a page may take, from opening it to its rendered HTML. */
  pageTimeoutMs: number;
  /** After the load event, how long to wait at most for the page's network to go quiet (scripts that fetch, then render). */
  settleMs: number;
  budget: PageBudget;
  now?: () => number;
}

/** Resource types a page gets none of by default: the DOM does not need them, and they are most of a page's bytes. */
const DEFAULT_BLOCKED_RESOURCES = ['image', 'font', 'media'];

export class BrowserFetcher implements Fetcher {
  readonly #o: BrowserFetcherOptions;
  readonly #routes: BrowserRoutes;
  readonly #pool: BrowserPool;
  readonly #now: () => number;
  /** Pages rendered since start, and those that failed (for logs and tests). */
  rendered = 0;
  failed = 0;

  constructor(options: BrowserFetcherOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#routes = new BrowserRoutes({
      fetcher: options.fetcher,
      robots: options.robots,
      blockResources: new Set(options.blockResources ?? DEFAULT_BLOCKED_RESOURCES),
    });
    this.#pool = new BrowserPool({ ...options, prepare: (context) => this.#routes.install(context) });
  }

  /** Browsers launched since start: more than one means one crashed, hung or was killed. */
  get launches(): number {
    return this.#pool.launches;
  }

  async fetch(request: FetchRequest, signal?: AbortSignal): Promise<FetchResult> {
    const document = await this.#o.fetcher.fetch(request, signal);
    if (!renderable(document)) return document;
    try {
      const rendered = await this.#render(request, document, signal);
      this.rendered++;
      return rendered;
    } catch (error) {
      this.failed++;
      throw error;
    }
  }

  async #render(request: FetchRequest, document: FetchResult, signal?: AbortSignal): Promise<FetchResult> {
    const o = this.#o;
    const started = this.#now();
    const lent = await this.#pool.acquire(request.crawl ?? '', signal);
    const { page } = lent;
    let fail!: (error: unknown) => void;
    const failure = new Promise<never>((_, reject) => {
      fail = reject;
    });
    const state = new RenderState(new URL(document.url).origin, request, o.budget, (reason) =>
      fail(new BrowserBudgetError(reason)),
    );
    state.document = document;
    this.#routes.track(page, state);
    const onAbort = () => fail(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    page.on('crash', () =>
      fail(new BrowserBudgetError('the page crashed in the browser (out of memory: BROWSER_PAGE_MEMORY_MB)')),
    );
    const timer = setTimeout(() => {
      fail(
        new BrowserBudgetError(
          `the page did not finish rendering within ${o.pageTimeoutMs} ms (BROWSER_PAGE_TIMEOUT_MS)`,
        ),
      );
    }, o.pageTimeoutMs);
    const work = (async () => {
      await page.goto(document.url, { waitUntil: 'load', timeout: 0 });
      await page.waitForLoadState('networkidle', { timeout: o.settleMs }).catch(() => undefined);
      return { html: await page.content(), url: page.url() };
    })();
    // Settles after a failure too (the page is closed under it): never unhandled.
    work.catch(() => undefined);
    try {
      const { html, url } = await Promise.race([work, failure]).catch((error: unknown) => {
        if (signal?.aborted || error instanceof BrowserBudgetError) throw error;
        throw new BrowserBudgetError(`the browser failed: ${(error as Error)?.message ?? String(error)}`);
      });
      const body = Buffer.from(html, 'utf8');
      const headers: Record<string, string[]> = { ...document.headers, 'content-type': ['text/html; charset=utf-8'] };
      delete headers['content-length'];
      return {
        ...document,
        url,
        headers,
        body,
        text: html,
        encoding: 'utf-8',
        fetchedMs: document.fetchedMs + (this.#now() - started),
      };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      state.abort.abort();
      // A page whose script still runs (a loop) may not close: the pool kills the browser then.
      await lent.release();
    }
  }

  /** Closes the browser (the crawler's fetcher is its owner's to close). */
  close(): Promise<void> {
    return this.#pool.close();
  }
}

/** Whether a fetched document is worth rendering: an HTML page that answered 2xx. */
function renderable(r: FetchResult): boolean {
  if (r.status < 200 || r.status >= 300 || r.text === undefined) return false;
  const type = r.headers['content-type']?.[0] ?? '';
  return type === '' || /html/i.test(type);
}

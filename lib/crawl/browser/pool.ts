/**
 * The browser of a browser worker (docs/spiders-browser.md): one headless Chromium process, driven by playwright-core,
 * and its contexts. A crawl gets a fresh context of its own (cookies, storage and cache never pass from one crawl to
 * another), reused for its next pages and recycled after {@link BrowserPoolOptions.contextPages} pages; at most
 * {@link BrowserPoolOptions.maxPages} pages are open at once. A browser that crashed or was killed is launched again
 * on the next page: its pages in flight fail (their try), the worker goes on.
 *
 * Chromium itself never reaches the network: every request of its pages is answered by the crawler
 * (lib/crawl/browser/routes.ts), and whatever could slip past request interception (a WebSocket, WebRTC, a DNS prefetch) meets a
 * proxy at a closed port on loopback, applied to loopback too, and a host resolver that resolves nothing.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { Log } from '../../ports.ts';
import { settlesWithin } from '../../timeout.ts';

/** Where nothing listens: the discard port on loopback, as the proxy every escaped request would have to use. */
const BLACK_HOLE_PROXY = 'http://127.0.0.1:9';

/** Chromium flags: no network of its own, nothing phoned home, a V8 heap limit per renderer. */
export function chromiumArgs(pageMemoryMb: number): string[] {
  return [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-dev-shm-usage',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--disable-extensions',
    '--mute-audio',
    `--proxy-server=${BLACK_HOLE_PROXY}`,
    // Chromium sends loopback around the proxy unless told not to.
    '--proxy-bypass-list=<-loopback>',
    '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
    '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
    '--webrtc-ip-handling-policy=disable_non_proxied_udp',
    // A script that allocates without end kills its renderer (the page crashes), not the machine.
    `--js-flags=--max-old-space-size=${pageMemoryMb}`,
  ];
}

export interface BrowserPoolOptions {
  /** The Chromium executable (Debian's `chromium`; the browser image pins its own). */
  executablePath: string;
  /** Pages open at once in this process. */
  maxPages: number;
  /** Pages a crawl's context serves before it is closed and a fresh one made. */
  contextPages: number;
  /** V8 heap limit of a renderer, MiB. */
  pageMemoryMb: number;
  /** Longest wait for the browser to start. @default 30000 */
  launchTimeoutMs?: number;
  /** Called on each new context before its first page (request interception). */
  prepare(context: BrowserContext): Promise<void>;
  log: Log;
}

interface CrawlContext {
  context: BrowserContext;
  /** Pages opened in it so far. */
  served: number;
  /** Pages open in it now. */
  open: number;
  /** No new pages: closed once its last page is done. */
  retired: boolean;
  lastUsed: number;
}

/** A page lent by the pool: `release` closes it (and a retired context with its last page). */
export interface PooledPage {
  page: Page;
  context: BrowserContext;
  release(): Promise<void>;
}

/** Contexts of crawls with no page open are closed after this long idle. */
const IDLE_CONTEXT_MS = 60_000;

/** Longest wait for Chromium to close a page or a context; past it the browser is killed and launched again. */
const CLOSE_TIMEOUT_MS = 5_000;

export class BrowserPool {
  readonly #o: BrowserPoolOptions;
  #browser: Promise<Browser> | undefined;
  readonly #contexts = new Map<string, CrawlContext>();
  #open = 0;
  readonly #waiting: (() => void)[] = [];
  #closed = false;
  /** Browsers launched since start (the first included): more than one means it crashed or was killed. */
  launches = 0;

  constructor(options: BrowserPoolOptions) {
    this.#o = options;
  }

  /** Pages open now. */
  get open(): number {
    return this.#open;
  }

  /** Waits for a free page slot, then opens a page in `crawl`'s context (made fresh when it has none). */
  async acquire(crawl: string, signal?: AbortSignal): Promise<PooledPage> {
    if (this.#open >= this.#o.maxPages) {
      await new Promise<void>((resolve, reject) => {
        const go = () => {
          signal?.removeEventListener('abort', stop);
          resolve();
        };
        const stop = () => {
          const at = this.#waiting.indexOf(go);
          if (at >= 0) this.#waiting.splice(at, 1);
          reject(signal?.reason);
        };
        signal?.addEventListener('abort', stop, { once: true });
        this.#waiting.push(go);
      });
    }
    this.#open++;
    let entry: CrawlContext | undefined;
    try {
      entry = await this.#contextFor(crawl);
      entry.open++;
      entry.served++;
      entry.lastUsed = Date.now();
      if (entry.served >= this.#o.contextPages) this.#retire(crawl, entry);
      const page = await entry.context.newPage();
      const e = entry;
      return { page, context: e.context, release: () => this.#release(page, e) };
    } catch (error) {
      if (entry) entry.open--;
      this.#freeSlot();
      throw error;
    }
  }

  async #release(page: Page, entry: CrawlContext): Promise<void> {
    try {
      const closed = await settlesWithin(page.close({ runBeforeUnload: false }), CLOSE_TIMEOUT_MS);
      if (!closed) await this.#kill('a page did not close');
    } catch {
      // A page of a browser that died: nothing left to close.
    } finally {
      entry.open--;
      this.#freeSlot();
      if (entry.retired && entry.open === 0) await this.#closeContext(entry);
      this.#sweep();
    }
  }

  #freeSlot(): void {
    this.#open--;
    this.#waiting.shift()?.();
  }

  #retire(crawl: string, entry: CrawlContext): void {
    entry.retired = true;
    if (this.#contexts.get(crawl) === entry) this.#contexts.delete(crawl);
  }

  /** Closes contexts idle past {@link IDLE_CONTEXT_MS}: a crawl that ended leaves nothing behind for long. */
  #sweep(): void {
    const now = Date.now();
    for (const [crawl, entry] of this.#contexts) {
      if (entry.open === 0 && now - entry.lastUsed > IDLE_CONTEXT_MS) {
        this.#retire(crawl, entry);
        void this.#closeContext(entry);
      }
    }
  }

  async #closeContext(entry: CrawlContext): Promise<void> {
    const closed = await settlesWithin(
      entry.context.close().catch(() => undefined),
      CLOSE_TIMEOUT_MS,
    );
    if (!closed) await this.#kill('a context did not close');
  }

  async #contextFor(crawl: string): Promise<CrawlContext> {
    const known = this.#contexts.get(crawl);
    if (known && !known.retired) return known;
    const browser = await this.#launch();
    const context = await browser.newContext({
      serviceWorkers: 'block',
      acceptDownloads: false,
      javaScriptEnabled: true,
    });
    await this.#o.prepare(context);
    const entry: CrawlContext = { context, served: 0, open: 0, retired: false, lastUsed: Date.now() };
    // Two pages of a new crawl at once may both have made one: the later one is kept, the other retires.
    const raced = this.#contexts.get(crawl);
    if (raced) this.#retire(crawl, raced);
    this.#contexts.set(crawl, entry);
    return entry;
  }

  #launch(): Promise<Browser> {
    if (this.#closed) return Promise.reject(new Error('the browser pool is closed'));
    if (this.#browser) return this.#browser;
    this.launches++;
    // playwright-core is loaded on the first launch, not with the module: an HTML crawler process, which never
    // launches a browser, does not pay its load time and memory.
    const launching = import('playwright-core')
      .then(({ chromium }) =>
        chromium.launch({
          executablePath: this.#o.executablePath,
          headless: true,
          args: chromiumArgs(this.#o.pageMemoryMb),
          timeout: this.#o.launchTimeoutMs ?? 30_000,
          // The worker handles SIGTERM itself (a graceful drain), and closes the browser last.
          handleSIGTERM: false,
          handleSIGINT: false,
          handleSIGHUP: false,
        }),
      )
      .then((browser) => {
        browser.on('disconnected', () => {
          if (this.#browser === launching) this.#forget();
          if (!this.#closed) this.#o.log.warn('the browser went away; the next page launches it again', {});
        });
        return browser;
      });
    this.#browser = launching;
    launching.catch(() => {
      if (this.#browser === launching) this.#browser = undefined;
    });
    return launching;
  }

  /** The browser is gone: its contexts with it. */
  #forget(): void {
    this.#browser = undefined;
    for (const [crawl, entry] of this.#contexts) this.#retire(crawl, entry);
  }

  /**
   * Kills the browser process (a renderer or the browser that stopped answering); the pages in it fail, the next one
   * launches a new browser.
   */
  async #kill(why: string): Promise<void> {
    const launching = this.#browser;
    if (!launching) return;
    this.#o.log.warn('killing the browser', { why });
    this.#forget();
    const browser = await launching.catch(() => undefined);
    // playwright-core kills the process when it does not close in time.
    await settlesWithin(browser?.close() ?? Promise.resolve(), CLOSE_TIMEOUT_MS);
  }

  /** A page that hung or crashed the browser: it is killed and launched again for the next page. */
  restart(why: string): Promise<void> {
    return this.#kill(why);
  }

  async close(): Promise<void> {
    this.#closed = true;
    const launching = this.#browser;
    this.#browser = undefined;
    this.#contexts.clear();
    const browser = await launching?.catch(() => undefined);
    if (browser) await settlesWithin(browser.close(), CLOSE_TIMEOUT_MS);
  }
}

/**
 * A browser worker's settings from the configuration (docs/spiders-browser.md): its {@link BrowserFetcher} and how
 * many pages it renders at once.
 */
import type { Variables } from '../../config/index.ts';
import type { Log } from '../../ports.ts';
import type { RobotsCache } from '../fetch/robots.ts';
import type { Fetcher } from '../types.ts';
import { BrowserFetcher } from './fetcher.ts';

/** The most pages a process renders at once when BROWSER_PAGES leaves it to the memory. */
export const MAX_AUTO_PAGES = 8;

/**
 * Pages rendered at once: BROWSER_PAGES, or one per four renderer heaps of the task's memory (a renderer's heap is
 * a part of its memory; the browser process, the DOM and the Node worker take the rest), 1 to {@link MAX_AUTO_PAGES}.
 */
export function browserPages(
  vars: Pick<Variables, 'BROWSER_PAGES' | 'BROWSER_PAGE_MEMORY_MB'>,
  memoryBytes: number,
): number {
  if (vars.BROWSER_PAGES > 0) return vars.BROWSER_PAGES;
  const perPage = 4 * vars.BROWSER_PAGE_MEMORY_MB * 1024 * 1024;
  return Math.max(1, Math.min(MAX_AUTO_PAGES, Math.floor(memoryBytes / perPage)));
}

export function browserFetcher(
  vars: Variables,
  deps: { fetcher: Fetcher; robots?: Pick<RobotsCache, 'check'>; memoryBytes: number; log: Log },
): BrowserFetcher {
  return new BrowserFetcher({
    fetcher: deps.fetcher,
    robots: deps.robots,
    executablePath: vars.BROWSER_CHROMIUM_PATH,
    maxPages: browserPages(vars, deps.memoryBytes),
    contextPages: vars.BROWSER_CONTEXT_PAGES,
    pageMemoryMb: vars.BROWSER_PAGE_MEMORY_MB,
    pageTimeoutMs: vars.BROWSER_PAGE_TIMEOUT_MS,
    settleMs: vars.BROWSER_SETTLE_MS,
    blockResources: vars.BROWSER_BLOCK_RESOURCES.split(',').filter((s) => s !== ''),
    budget: { maxRequests: vars.BROWSER_MAX_REQUESTS, maxBytes: vars.BROWSER_MAX_BYTES },
    log: deps.log,
  });
}

/**
 * Crawl throughput as every throughput scenario counts it: pages per second from the first page to the
 * last (`(pages - 1) / (last - first)`), so start-up before the first page and shutdown after the last are
 * not part of it, for our crawler, the raw loop and Crawlee alike.
 */

export interface PageClock {
  pages: number;
  /** Epoch ms of the first and last page (NaN before any). */
  firstMs: number;
  lastMs: number;
  /** First to last page, in seconds. */
  seconds: number;
  pagesPerS: number;
}

/** Counts pages as they complete (`page()`), or from timestamps (`at(ms)`). */
export function pageClock() {
  let pages = 0;
  let first = Number.NaN;
  let last = Number.NaN;
  const at = (ms: number) => {
    pages++;
    if (!(ms >= first)) first = ms;
    if (!(ms <= last)) last = ms;
  };
  const rate = () => (pages > 1 && last > first ? ((pages - 1) * 1000) / (last - first) : 0);
  return {
    get pages() {
      return pages;
    },
    page: () => at(performance.timeOrigin + performance.now()),
    at,
    rate,
    result: (): PageClock => ({
      pages,
      firstMs: first,
      lastMs: last,
      seconds: pages > 1 ? (last - first) / 1000 : 0,
      pagesPerS: rate(),
    }),
  };
}

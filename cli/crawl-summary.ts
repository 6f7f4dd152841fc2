/**
 * The pages of a crawl counted by outcome class, for `crawl`'s summary: `2xx`, `3xx`, `4xx`, `5xx` by the page's
 * HTTP status, and `failed` for a page without one (a timeout, a refused connection, a robots.txt denial). A 404 is
 * a page the cluster delivered like any other (`success: true`); this count is where a broken link shows without grep.
 * The page message carries no count of links skipped by rule (deny_extensions, deny_regex), so none is shown.
 */
import type { Message } from './reply-wait.ts';

/** The classes in the order they are shown. */
const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx', 'failed'] as const;

/** An outcome class of a page. */
export type StatusClass = (typeof STATUS_CLASSES)[number];

/** Pages per outcome class; a class no page fell in is absent. */
export type StatusClassCounts = Partial<Record<StatusClass, number>>;

/**
 * The outcome class of one page message: its status code's hundreds, `failed` for a failed page without an HTTP
 * status, undefined for a page that names neither (not a page message of the contract).
 */
export function statusClassOf(page: Message): StatusClass | undefined {
  const code = page.status_code;
  if (typeof code === 'number' && code >= 100 && code < 600) return `${Math.floor(code / 100)}xx` as StatusClass;
  return page.success === false ? 'failed' : undefined;
}

/** Adds one page to `counts` (each page once: the caller drops redeliveries). */
export function countStatusClass(counts: StatusClassCounts, page: Message): void {
  const cls = statusClassOf(page);
  if (cls !== undefined) counts[cls] = (counts[cls] ?? 0) + 1;
}

/** `by status: 6 2xx, 1 4xx, 2 failed`, or undefined when no page was counted. */
export function statusClassLine(counts: StatusClassCounts | undefined): string | undefined {
  if (counts === undefined) return undefined;
  const parts = STATUS_CLASSES.filter((cls) => (counts[cls] ?? 0) > 0).map((cls) => `${counts[cls]} ${cls}`);
  return parts.length === 0 ? undefined : `by status: ${parts.join(', ')}`;
}

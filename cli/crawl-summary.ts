/**
 * The pages of a crawl counted by outcome class, for `crawl`'s summary: `2xx`, `3xx`, `4xx`, `5xx` by the page's
 * HTTP status, and `failed` for a page without one (a timeout, a refused connection, a robots.txt denial). A 404 is
 * a page the cluster delivered like any other (`success: true`); this count is where a broken link shows without grep.
 * Links the crawl's rules kept from being followed are summed from the pages' `links_skipped`, by rule.
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

/** Links kept from being followed, by the rule (request field) that kept them. */
export type SkippedLinkCounts = Record<string, number>;

/** Adds a page's `links_skipped` to `counts` (each page once). Anything but a count per rule is ignored. */
export function countSkippedLinks(counts: SkippedLinkCounts, page: Message): void {
  const skipped = page.links_skipped;
  if (skipped === null || typeof skipped !== 'object' || Array.isArray(skipped)) return;
  for (const [rule, n] of Object.entries(skipped as Record<string, unknown>)) {
    if (typeof n === 'number' && Number.isSafeInteger(n) && n > 0) counts[rule] = (counts[rule] ?? 0) + n;
  }
}

/** `links not followed: 12 by deny_extensions, 3 by allowed_domains` (most first), or undefined when none were. */
export function skippedLinksLine(counts: SkippedLinkCounts): string | undefined {
  const parts = Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .map(([rule, n]) => `${n} by ${rule}`);
  return parts.length === 0 ? undefined : `links not followed: ${parts.join(', ')}`;
}

/**
 * Link extraction (docs/design.md §5), bounded (docs/design.md §10: parsing bounded in time and depth).
 *
 * Pages are written by strangers, so this must not be able to hang or crash a worker. A DOM walked recursively
 * cannot promise that: htmlparser2's `Parser` moves its whole open-element stack on every tag (`unshift` and
 * `indexOf`, quadratic in the nesting), a page of millions of elements pins a worker past its lease and then the
 * next worker on the same page, and deep nesting inside one `<a>` overflows the stack. So this is one pass over
 * htmlparser2's `Tokenizer` that builds no DOM, slices no text outside links and has no recursion:
 *
 * - Linear: each element is pushed and popped at most once; whether a close tag matches an open element
 *   is a per-name count, not a scan of the stack. Depth costs one stack entry per open element, never a
 *   stack frame.
 * - Bounded: at most `maxLinks` links and `maxLinkTextChars` characters of text per link are kept, and a
 *   time budget is checked between tags every few thousand tokens ({@link ExtractOptions}).
 *
 * The result is the one the DOM gave: the open-element stack of lib/crawl/extract/pass.ts replays exactly what the
 * `Parser` did to the tree (the implied closes of `openImpliesClose`, void elements, `</tag>` closing everything up
 * to the nearest open `tag` and being ignored when there is none, self-closing tags only in `<svg>` and `<math>`),
 * so a text belongs to the link it was inside in the old tree. It reads copies of the private tables of
 * htmlparser2 10.1.0's Parser (lib/crawl/extract/tables.ts; that version is pinned), which
 * test/unit/extract-tables.test.ts compares with the installed htmlparser2's, so a version that changes them fails
 * until they are copied again.
 */
import { performance } from 'node:perf_hooks';
import type { Link } from '../types.ts';
import { type Bounds, ExtractPass } from './pass.ts';

/** Bounds of one extraction. */
export interface ExtractOptions {
  /**
   * Distinct links to collect: on reaching the next new one, extraction stops (and says so); nothing
   * after it is read, so a link still open there keeps the text read so far.
   * @default 10_000
   */
  maxLinks?: number;
  /**
   * Characters of (collapsed) text kept per link; the rest is skipped without being copied.
   * @default 1_000
   */
  maxLinkTextChars?: number;
  /**
   * Time budget in milliseconds, checked between tags every few thousand tokens: when spent, extraction
   * stops (and says so) with the links found so far.
   * @default 2_000
   */
  budgetMs?: number;
  /** The clock the budget is measured with, in milliseconds (tests inject a fake one). @default performance.now */
  now?: () => number;
}

/** The links of a page, and why extraction stopped early if it did. */
export interface PageLinks {
  links: Link[];
  /** A short human reason (`link extraction stopped at 10000 links`); absent when the whole page was read. */
  stopped?: string;
  /** Set when the page has more than `maxLinks` links (to this cap): extraction stopped at the next one. */
  moreThan?: number;
}

/** Distinct links read from one page unless told otherwise (`CRAWLER_MAX_LINKS` sets it for the crawler). */
export const DEFAULT_MAX_LINKS = 10_000;
const DEFAULT_MAX_LINK_TEXT_CHARS = 1_000;
const DEFAULT_BUDGET_MS = 2_000;

/**
 * The http(s) links of an HTML page, in document order, each URL once (the first occurrence's text
 * wins), and whether a bound stopped extraction early (see {@link ExtractOptions}).
 *
 * - `<a href>` and `<area href>`; an `<area>`'s text is its `alt`.
 * - Resolved with the WHATWG URL parser against the first `<base href>` (itself resolved against
 *   `pageUrl`; ignored when it does not parse), else against `pageUrl`. A base that comes after links
 *   costs a second pass over the page.
 * - Fragments removed; any scheme but http and https dropped (`javascript:`, `mailto:`, `tel:`,
 *   `data:`, ...), as are hrefs that do not parse.
 * - Link text: every text inside the element, whitespace runs collapsed to one space, trimmed, cut to
 *   `maxLinkTextChars`. Script and style bodies are not link text, nor is a nested `<a>`'s text:
 *   htmlparser2 nests an unclosed anchor's successors inside it, where a browser would have closed it.
 * - Malformed markup is tolerated (the tokenizer never throws); tag and attribute names are
 *   case-insensitive.
 *
 * URLs are not canonicalized here: `links` in the page item shows them as the page had them, and the
 * frontier canonicalizes for the dupefilter.
 */
export function extractPageLinks(html: string, pageUrl: string, options: ExtractOptions = {}): PageLinks {
  const page = URL.parse(pageUrl);
  if (page === null) return { links: [] };
  const now = options.now ?? (() => performance.now());
  const bounds: Bounds = {
    maxLinks: options.maxLinks ?? DEFAULT_MAX_LINKS,
    maxLinkTextChars: options.maxLinkTextChars ?? DEFAULT_MAX_LINK_TEXT_CHARS,
    budgetMs: options.budgetMs ?? DEFAULT_BUDGET_MS,
    now,
    start: now(),
  };
  let pass = new ExtractPass(html, page.href, undefined, bounds);
  pass.run();
  if (pass.restartBase !== undefined) {
    pass = new ExtractPass(html, page.href, pass.restartBase, bounds);
    pass.run();
  }
  if (pass.stopped === undefined) return { links: pass.links() };
  return pass.capped
    ? { links: pass.links(), stopped: pass.stopped, moreThan: bounds.maxLinks }
    : { links: pass.links(), stopped: pass.stopped };
}

/** The links of {@link extractPageLinks}, without the reason it stopped early, if it did. */
export function extractLinks(html: string, pageUrl: string, options?: ExtractOptions): Link[] {
  return extractPageLinks(html, pageUrl, options).links;
}

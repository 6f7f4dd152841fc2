/**
 * Link extraction (DESIGN.md §5): cheerio on the htmlparser2 parser (`cheerio/slim`; parse5 is ~3×
 * slower and tolerance of broken markup matters more than spec-exact trees here).
 */
import { load } from 'cheerio/slim';
import type { Link } from './types.ts';

/** The parts of a domhandler node the text collector reads (cheerio does not re-export domhandler). */
interface TextNode {
  type: string;
  name?: string;
  data?: string;
  children?: TextNode[];
}

const WHITESPACE_RUN = /\s+/g;

/**
 * Every text node under `node`, in document order. Script and style bodies are not link text, nor is
 * a nested `<a>`: htmlparser2 nests an unclosed anchor's successors inside it, where a browser would
 * have closed it.
 */
function collectText(node: TextNode, out: string[]): void {
  const children = node.children;
  if (children === undefined) return;
  for (const child of children) {
    if (child.type === 'text') out.push(child.data ?? '');
    else if (child.type === 'tag' && child.name !== 'a') collectText(child, out);
  }
}

function collapse(text: string): string {
  return text.replace(WHITESPACE_RUN, ' ').trim();
}

/**
 * The http(s) links of an HTML page, in document order, each URL once (the first occurrence's text
 * wins).
 *
 * - `<a href>` and `<area href>`; an `<area>`'s text is its `alt`.
 * - Resolved with the WHATWG URL parser against the first `<base href>` (itself resolved against
 *   `pageUrl`; ignored when it does not parse), else against `pageUrl`.
 * - Fragments removed; any scheme but http and https dropped (`javascript:`, `mailto:`, `tel:`,
 *   `data:`, ...), as are hrefs that do not parse.
 * - Link text: every text node inside the element, whitespace runs collapsed to one space, trimmed.
 * - Malformed markup is tolerated (htmlparser2 never throws); tag and attribute names are
 *   case-insensitive.
 *
 * URLs are not canonicalized here: `links` in the page item shows them as the page had them, and the
 * frontier canonicalizes for the dupefilter.
 */
export function extractLinks(html: string, pageUrl: string): Link[] {
  const $ = load(html);
  const page = URL.parse(pageUrl);
  if (page === null) return [];
  let base = page.href;
  const baseHref = $('base[href]').first().attr('href');
  if (baseHref !== undefined) base = URL.parse(baseHref, base)?.href ?? base;

  const links: Link[] = [];
  const seen = new Set<string>();
  for (const element of $('a[href], area[href]')) {
    const url = URL.parse(element.attribs.href as string, base);
    if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) continue;
    url.hash = '';
    const href = url.href;
    if (seen.has(href)) continue;
    seen.add(href);
    let text: string;
    if (element.name === 'area') {
      text = collapse(element.attribs.alt ?? '');
    } else {
      const parts: string[] = [];
      collectText(element as TextNode, parts);
      text = collapse(parts.join(''));
    }
    links.push({ url: href, text });
  }
  return links;
}

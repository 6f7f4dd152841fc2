/**
 * What the link extractor (lib/crawl/extract/pass.ts) keeps of a link: its URL, resolved against the page's base
 * and without its fragment (http and https only), and its text, collapsed as it arrives and cut at a bound, so
 * neither ever needs the page's whole text.
 */

/**
 * A link being collected. Its text is kept collapsed as it arrives (`space`: whitespace was seen after
 * the last word), so cutting it never needs the whole text.
 */
export interface LinkRecord {
  url: string;
  text: string;
  space: boolean;
  full: boolean;
}

/**
 * `href` resolved with the WHATWG URL parser against `base`, without its fragment; undefined when it does not parse
 * or its scheme is neither http nor https.
 */
export function linkUrl(href: string, base: string): string | undefined {
  const url = URL.parse(href, base);
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) return undefined;
  // Without its fragment: the serialization's first '#' starts it (nothing before it holds a raw '#'). Cut from
  // the string, which is cheaper than the `hash` setter's reparse.
  const full = url.href;
  const cut = full.indexOf('#');
  return cut < 0 ? full : full.slice(0, cut);
}

/** The code units `/\s/` matches (and `String.prototype.trim` removes), which the old collapse used. */
function isSpace(c: number): boolean {
  if (c <= 32) return c === 32 || (c >= 9 && c <= 13);
  if (c < 0xa0) return false;
  return (
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

/**
 * Appends `s[from, to)` to a link's text, collapsing whitespace runs to one space and dropping leading
 * ones, up to `cap` characters: the same text as collapsing and trimming the joined text nodes, cut.
 */
export function appendLinkText(record: LinkRecord, s: string, from: number, to: number, cap: number): void {
  let text = record.text;
  let space = record.space;
  let i = from;
  while (i < to) {
    if (isSpace(s.charCodeAt(i))) {
      if (text.length > 0) space = true;
      i++;
      continue;
    }
    if (space) {
      // A space with no room for a character after it would only be trimmed again.
      if (text.length + 1 >= cap) {
        record.full = true;
        break;
      }
      text += ' ';
      space = false;
    }
    const room = cap - text.length;
    if (room <= 0) {
      // Cut inside a word: not between the halves of a surrogate pair, which would leave a lone one.
      const last = text.charCodeAt(text.length - 1);
      if (last >= 0xd800 && last <= 0xdbff) text = text.slice(0, -1).trimEnd();
      record.full = true;
      break;
    }
    const limit = to - i > room ? i + room : to;
    let j = i + 1;
    while (j < limit && !isSpace(s.charCodeAt(j))) j++;
    text += s.slice(i, j);
    i = j;
  }
  record.text = text;
  record.space = record.full ? false : space;
}

/**
 * Link extraction (docs/design.md §5), bounded (docs/design.md §10: parsing bounded in time and depth).
 *
 * Pages are written by strangers, so this must not be able to hang or crash a worker. It used to build a
 * cheerio DOM and walk it recursively: 80k nested tags took 16 s (htmlparser2's `Parser` moves its whole
 * open-element stack on every tag, `unshift` and `indexOf`), a million `<div>`s pinned a worker until its
 * lease expired and then the next worker hung on the same page, and 200k `<span>`s inside one `<a>`
 * overflowed the stack. Now it is one pass over htmlparser2's `Tokenizer` that builds no DOM, slices no
 * text outside links and has no recursion:
 *
 * - Linear: each element is pushed and popped at most once; whether a close tag matches an open element
 *   is a per-name count, not a scan of the stack. Depth costs one stack entry per open element, never a
 *   stack frame.
 * - Bounded: at most `maxLinks` links and `maxLinkTextChars` characters of text per link are kept, and a
 *   time budget is checked between tags every few thousand tokens ({@link ExtractOptions}).
 *
 * The result is the one the DOM gave: the open-element stack replays exactly what the `Parser` did to
 * the tree (the implied closes of `openImpliesClose`, void elements, `</tag>` closing everything up to
 * the nearest open `tag` and being ignored when there is none, self-closing tags only in `<svg>` and
 * `<math>`), so a text belongs to the link it was inside in the old tree. The tables below are copies of the
 * private tables of htmlparser2 10.1.0's Parser (that version is pinned); test/unit/extract-tables.test.ts compares
 * them with the installed htmlparser2's, so a version that changes them fails until they are copied again.
 */
import { performance } from 'node:perf_hooks';
import { Tokenizer, type TokenizerCallbacks } from 'htmlparser2';
import type { Link } from './types.ts';

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
}

const DEFAULT_MAX_LINKS = 10_000;
const DEFAULT_MAX_LINK_TEXT_CHARS = 1_000;
const DEFAULT_BUDGET_MS = 2_000;
/** Work units (tokens, plus a unit per 64 characters copied or parsed) between two looks at the clock. */
const CHECK_EVERY = 4096;

// As htmlparser2 10.1.0's Parser: the elements an opening tag closes when they are the current element.
const P_TAG = new Set(['p']);
const FORM_TAGS = new Set(['input', 'option', 'optgroup', 'select', 'button', 'datalist', 'textarea']);
const TABLE_SECTION_TAGS = new Set(['thead', 'tbody']);
const DD_DT_TAGS = new Set(['dd', 'dt']);
const RT_RP_TAGS = new Set(['rt', 'rp']);
const OPEN_IMPLIES_CLOSE = new Map<string, Set<string>>([
  ['tr', new Set(['tr', 'th', 'td'])],
  ['th', new Set(['th'])],
  ['td', new Set(['thead', 'th', 'td'])],
  ['body', new Set(['head', 'link', 'script'])],
  ['li', new Set(['li'])],
  ['p', P_TAG],
  ['h1', P_TAG],
  ['h2', P_TAG],
  ['h3', P_TAG],
  ['h4', P_TAG],
  ['h5', P_TAG],
  ['h6', P_TAG],
  ['select', FORM_TAGS],
  ['input', FORM_TAGS],
  ['output', FORM_TAGS],
  ['button', FORM_TAGS],
  ['datalist', FORM_TAGS],
  ['textarea', FORM_TAGS],
  ['option', new Set(['option'])],
  ['optgroup', new Set(['optgroup', 'option'])],
  ['dd', DD_DT_TAGS],
  ['dt', DD_DT_TAGS],
  ['address', P_TAG],
  ['article', P_TAG],
  ['aside', P_TAG],
  ['blockquote', P_TAG],
  ['details', P_TAG],
  ['div', P_TAG],
  ['dl', P_TAG],
  ['fieldset', P_TAG],
  ['figcaption', P_TAG],
  ['figure', P_TAG],
  ['footer', P_TAG],
  ['form', P_TAG],
  ['header', P_TAG],
  ['hr', P_TAG],
  ['main', P_TAG],
  ['nav', P_TAG],
  ['ol', P_TAG],
  ['pre', P_TAG],
  ['section', P_TAG],
  ['table', P_TAG],
  ['ul', P_TAG],
  ['rt', RT_RP_TAGS],
  ['rp', RT_RP_TAGS],
  ['tbody', TABLE_SECTION_TAGS],
  ['tfoot', TABLE_SECTION_TAGS],
]);
const VOID_ELEMENTS = new Set([
  'area',
  'base',
  'basefont',
  'br',
  'col',
  'command',
  'embed',
  'frame',
  'hr',
  'img',
  'input',
  'isindex',
  'keygen',
  'link',
  'meta',
  'param',
  'source',
  'track',
  'wbr',
]);
const FOREIGN_CONTEXT_ELEMENTS = new Set(['math', 'svg']);
const HTML_INTEGRATION_ELEMENTS = new Set([
  'mi',
  'mo',
  'mn',
  'ms',
  'mtext',
  'annotation-xml',
  'foreignobject',
  'desc',
  'title',
]);

/**
 * The Parser tables above, exported only so test/unit/extract-tables.test.ts can hold them to the installed
 * htmlparser2's own; nothing else reads them from here.
 * @internal
 */
export const PARSER_TABLES = {
  openImpliesClose: OPEN_IMPLIES_CLOSE,
  voidElements: VOID_ELEMENTS,
  foreignContextElements: FOREIGN_CONTEXT_ELEMENTS,
  htmlIntegrationElements: HTML_INTEGRATION_ELEMENTS,
} as const;

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
 * The foreign-context change an element makes when it opens or closes: `true` for `<svg>` and `<math>`,
 * `false` for HTML integration points, undefined for the rest.
 */
function contextOf(name: string): boolean | undefined {
  if (FOREIGN_CONTEXT_ELEMENTS.has(name)) return true;
  return HTML_INTEGRATION_ELEMENTS.has(name) ? false : undefined;
}

/**
 * A tag name, shared by all its elements and looked up in the tables once: `open` answers "is one
 * open?" without scanning the stack.
 */
interface TagName {
  readonly name: string;
  open: number;
  readonly implies: ReadonlySet<string> | undefined;
  readonly isVoid: boolean;
  readonly context: boolean | undefined;
}

/**
 * A link being collected. Its text is kept collapsed as it arrives (`space`: whitespace was seen after
 * the last word), so cutting it never needs the whole text.
 */
interface LinkRecord {
  url: string;
  text: string;
  space: boolean;
  full: boolean;
}

/** Text goes nowhere: outside links, in `<script>`/`<style>`, in an `<a>` not collected. */
const NO_OWNER = -1;

/** Which attribute of the current tag is being read: only these are worth copying. */
const ATTR_NONE = 0;
const ATTR_HREF = 1;
const ATTR_ALT = 2;

interface Bounds {
  maxLinks: number;
  maxLinkTextChars: number;
  budgetMs: number;
  now: () => number;
  start: number;
}

/**
 * One tokenizer pass. `fixedBase` is set on the second pass that a `<base href>` found after links
 * forces: the first base decides the base URL of every link, before it or not, as it did in the DOM.
 */
class Pass implements TokenizerCallbacks {
  readonly #html: string;
  readonly #pageHref: string;
  readonly #bounds: Bounds;
  readonly #tokenizer: Tokenizer;

  #base: string;
  #baseDecided: boolean;
  #sawLink = false;
  /** Set when a late `<base href>` changes the base: the caller runs a second pass with it. */
  restartBase: string | undefined;
  stopped: string | undefined;

  readonly #records: LinkRecord[] = [];
  readonly #seen = new Set<string>();

  readonly #names = new Map<string, TagName>();
  readonly #stack: TagName[] = [];
  /** Per stack level, the index in #records of the link that text at that level belongs to. */
  readonly #owners: number[] = [];
  /** The `Parser`'s foreign-context stack (top last), where self-closing tags close. */
  readonly #foreign: boolean[] = [false];

  #tag: TagName | undefined;
  #collectAttrs = false;
  #attr = ATTR_NONE;
  #value = '';
  #href: string | undefined;
  #alt: string | undefined;

  #work = 0;
  #nextCheck = CHECK_EVERY;

  constructor(html: string, pageHref: string, fixedBase: string | undefined, bounds: Bounds) {
    this.#html = html;
    this.#pageHref = pageHref;
    this.#base = fixedBase ?? pageHref;
    this.#baseDecided = fixedBase !== undefined;
    this.#bounds = bounds;
    this.#tokenizer = new Tokenizer({ xmlMode: false, decodeEntities: true }, this);
  }

  run(): void {
    this.#tokenizer.write(this.#html);
    if (this.#tokenizer.running) this.#tokenizer.end();
  }

  links(): Link[] {
    return this.#records.map((r) => ({ url: r.url, text: r.text }));
  }

  #stop(reason: string | undefined): void {
    this.stopped ??= reason;
    this.#tokenizer.pause();
  }

  get #done(): boolean {
    return !this.#tokenizer.running;
  }

  /** Counts work proportional to the input: copying and parsing long strings, as well as tokens. */
  #tick(weight: number): void {
    this.#work += weight;
  }

  /**
   * Looks at the clock when enough work was done since the last look. Called only between tags and
   * comments, so every link already collected has its text up to here and the page's order is kept.
   */
  #checkpoint(): void {
    this.#work += 1;
    if (this.#work < this.#nextCheck) return;
    this.#nextCheck = this.#work + CHECK_EVERY;
    const { now, start, budgetMs } = this.#bounds;
    if (now() - start >= budgetMs) this.#stop(`link extraction stopped after ${budgetMs} ms (time budget)`);
  }

  // --- the element stack ---

  #push(tag: TagName, owner: number): void {
    tag.open++;
    this.#stack.push(tag);
    this.#owners.push(owner);
  }

  #pop(): TagName | undefined {
    const tag = this.#stack.pop();
    if (tag !== undefined) {
      tag.open--;
      this.#owners.pop();
    }
    return tag;
  }

  #top(): TagName | undefined {
    return this.#stack[this.#stack.length - 1];
  }

  #currentOwner(): number {
    return this.#owners[this.#owners.length - 1] ?? NO_OWNER;
  }

  #tagName(start: number, end: number): TagName {
    const name = this.#html.slice(start, end).toLowerCase();
    let tag = this.#names.get(name);
    if (tag === undefined) {
      tag = {
        name,
        open: 0,
        implies: OPEN_IMPLIES_CLOSE.get(name),
        isVoid: VOID_ELEMENTS.has(name),
        context: contextOf(name),
      };
      this.#names.set(name, tag);
    }
    return tag;
  }

  /** The `Parser`'s emitOpenTag, onopentag and (for self-closing tags) closeCurrentTag, in its order. */
  #openTag(selfClosing: boolean): void {
    const tag = this.#tag;
    if (tag === undefined || this.#done) return;
    this.#tag = undefined;
    this.#collectAttrs = false;
    const name = tag.name;
    const implied = tag.implies;
    if (implied !== undefined) {
      for (let top = this.#top(); top !== undefined && implied.has(top.name); top = this.#top()) this.#pop();
    }
    let owner = this.#currentOwner();
    if (name === 'a') {
      owner = this.#href === undefined ? NO_OWNER : this.#addLink(this.#href, undefined);
    } else if (name === 'area') {
      if (this.#href !== undefined) this.#addLink(this.#href, this.#alt ?? '');
    } else if (name === 'script' || name === 'style') {
      // domhandler made these a "script"/"style" node, not a "tag" one, and the old text walk skipped them.
      owner = NO_OWNER;
    } else if (name === 'base' && this.#href !== undefined && !this.#baseDecided) {
      this.#setBase(this.#href);
    }
    if (this.#done || tag.isVoid) return;
    this.#push(tag, owner);
    if (tag.context !== undefined) this.#foreign.push(tag.context);
    if (selfClosing && this.#foreign[this.#foreign.length - 1] === true) this.#pop();
  }

  // --- links ---

  #setBase(href: string): void {
    this.#baseDecided = true;
    const base = URL.parse(href, this.#pageHref)?.href;
    if (base === undefined || base === this.#base) return;
    if (this.#sawLink) {
      this.restartBase = base;
      this.#stop(undefined);
    } else {
      this.#base = base;
    }
  }

  /** The index of the new link's record, or NO_OWNER when the href is dropped or a duplicate. */
  #addLink(href: string, alt: string | undefined): number {
    this.#sawLink = true;
    this.#tick(href.length >>> 6);
    const url = URL.parse(href, this.#base);
    if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) return NO_OWNER;
    // Without its fragment: the serialization's first '#' starts it (nothing before it holds a raw '#'). Cut from
    // the string, which is cheaper than the `hash` setter's reparse.
    const full = url.href;
    const cut = full.indexOf('#');
    const key = cut < 0 ? full : full.slice(0, cut);
    if (this.#seen.has(key)) return NO_OWNER;
    const { maxLinks } = this.#bounds;
    if (this.#records.length >= maxLinks) {
      this.#stop(`link extraction stopped at ${maxLinks} links`);
      return NO_OWNER;
    }
    this.#seen.add(key);
    const record: LinkRecord = { url: key, text: '', space: false, full: false };
    this.#records.push(record);
    if (alt !== undefined) this.#appendText(record, alt, 0, alt.length);
    return this.#records.length - 1;
  }

  /**
   * Appends `s[from, to)` to a link's text, collapsing whitespace runs to one space and dropping leading
   * ones, up to maxLinkTextChars: the same text as collapsing and trimming the joined text nodes, cut.
   */
  #appendText(record: LinkRecord, s: string, from: number, to: number): void {
    this.#tick((to - from) >>> 6);
    const cap = this.#bounds.maxLinkTextChars;
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

  #text(s: string, from: number, to: number): void {
    const owner = this.#currentOwner();
    if (owner === NO_OWNER) return;
    const record = this.#records[owner] as LinkRecord;
    if (!record.full) this.#appendText(record, s, from, to);
  }

  // --- TokenizerCallbacks ---

  onopentagname(start: number, endIndex: number): void {
    this.#checkpoint();
    if (this.#done) return;
    const tag = this.#tagName(start, endIndex);
    this.#tag = tag;
    this.#href = undefined;
    this.#alt = undefined;
    this.#attr = ATTR_NONE;
    const name = tag.name;
    this.#collectAttrs = name === 'a' || name === 'area' || (name === 'base' && !this.#baseDecided);
  }

  onattribname(start: number, endIndex: number): void {
    this.#tick(1);
    this.#attr = ATTR_NONE;
    if (!this.#collectAttrs) return;
    const name = this.#html.slice(start, endIndex).toLowerCase();
    // The first of duplicate attributes wins, as in the Parser.
    if (name === 'href' && this.#href === undefined) this.#attr = ATTR_HREF;
    else if (name === 'alt' && this.#alt === undefined && this.#tag?.name === 'area') this.#attr = ATTR_ALT;
    this.#value = '';
  }

  onattribdata(start: number, endIndex: number): void {
    if (this.#attr === ATTR_NONE) return;
    this.#tick((endIndex - start) >>> 6);
    this.#value += this.#html.slice(start, endIndex);
  }

  onattribentity(codepoint: number): void {
    if (this.#attr !== ATTR_NONE) this.#value += String.fromCodePoint(codepoint);
  }

  onattribend(): void {
    if (this.#attr === ATTR_HREF) this.#href = this.#value;
    else if (this.#attr === ATTR_ALT) this.#alt = this.#value;
    this.#attr = ATTR_NONE;
    this.#value = '';
  }

  onopentagend(): void {
    this.#openTag(false);
  }

  onselfclosingtag(): void {
    this.#openTag(true);
  }

  onclosetag(start: number, endIndex: number): void {
    this.#checkpoint();
    if (this.#done) return;
    const name = this.#html.slice(start, endIndex).toLowerCase();
    // Names never opened are not interned: a page of distinct end tags must not grow the table.
    const tag = this.#names.get(name);
    if ((tag === undefined ? contextOf(name) : tag.context) !== undefined) this.#foreign.pop();
    // A void end tag (`</br>` included) and one with no open element of its name (`</p>` included) add
    // only empty elements to the tree: no text moves.
    if (tag === undefined || tag.isVoid || tag.open === 0) return;
    // Everything opened inside it closes with it.
    for (let popped = this.#pop(); popped !== tag && popped !== undefined; popped = this.#pop()) {}
  }

  ontext(start: number, endIndex: number): void {
    this.#tick(1);
    if (this.#done) return;
    // The tokenizer reports trailing text after an unterminated end tag (`</x y` at the very end) from
    // -1, which the Parser's `slice` read as the last character; read it the same way.
    const from = start < 0 ? Math.max(0, this.#html.length + start) : start;
    this.#text(this.#html, from, endIndex);
  }

  ontextentity(codepoint: number): void {
    this.#tick(1);
    if (this.#done || this.#currentOwner() === NO_OWNER) return;
    const s = String.fromCodePoint(codepoint);
    this.#text(s, 0, s.length);
  }

  oncdata(): void {
    this.#checkpoint();
  }

  oncomment(): void {
    this.#checkpoint();
  }

  ondeclaration(): void {
    this.#checkpoint();
  }

  onprocessinginstruction(): void {
    this.#checkpoint();
  }

  onend(): void {}
}

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
  let pass = new Pass(html, page.href, undefined, bounds);
  pass.run();
  if (pass.restartBase !== undefined) {
    pass = new Pass(html, page.href, pass.restartBase, bounds);
    pass.run();
  }
  return pass.stopped === undefined ? { links: pass.links() } : { links: pass.links(), stopped: pass.stopped };
}

/** The links of {@link extractPageLinks}, without the reason it stopped early, if it did. */
export function extractLinks(html: string, pageUrl: string, options?: ExtractOptions): Link[] {
  return extractPageLinks(html, pageUrl, options).links;
}

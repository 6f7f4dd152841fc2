/**
 * One tokenizer pass of the link extractor (lib/crawl/extract/links.ts `extractPageLinks`): htmlparser2's `Tokenizer`
 * drives it, and an open-element stack replays what htmlparser2's `Parser` did to the tree (its tables:
 * lib/crawl/extract/tables.ts), so a text belongs to the link it was inside in the DOM the extractor once built. Linear,
 * without recursion, bounded in links, text per link (lib/crawl/extract/link-record.ts) and time.
 */
import { Tokenizer, type TokenizerCallbacks } from 'htmlparser2';
import type { Link } from '../types.ts';
import { appendLinkText, type LinkRecord, linkUrl } from './link-record.ts';
import { contextOf, OPEN_IMPLIES_CLOSE, VOID_ELEMENTS } from './tables.ts';

/** Work units (tokens, plus a unit per 64 characters copied or parsed) between two looks at the clock. */
const CHECK_EVERY = 4096;

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

/** Text goes nowhere: outside links, in `<script>`/`<style>`, in an `<a>` not collected. */
const NO_OWNER = -1;

/** Which attribute of the current tag is being read: only these are worth copying. */
const ATTR_NONE = 0;
const ATTR_HREF = 1;
const ATTR_ALT = 2;

/** The bounds of one extraction, resolved (lib/crawl/extract/links.ts `ExtractOptions`), and when it started. */
export interface Bounds {
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
export class ExtractPass implements TokenizerCallbacks {
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
  /** Stopped at maxLinks: the page has more. */
  capped = false;

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
    const key = linkUrl(href, this.#base);
    if (key === undefined || this.#seen.has(key)) return NO_OWNER;
    const { maxLinks } = this.#bounds;
    if (this.#records.length >= maxLinks) {
      this.capped = true;
      this.#stop(`link extraction stopped at ${maxLinks} links`);
      return NO_OWNER;
    }
    this.#seen.add(key);
    const record: LinkRecord = { url: key, text: '', space: false, full: false };
    this.#records.push(record);
    if (alt !== undefined) this.#appendText(record, alt, 0, alt.length);
    return this.#records.length - 1;
  }

  /** {@link appendLinkText} up to maxLinkTextChars, counted as work. */
  #appendText(record: LinkRecord, s: string, from: number, to: number): void {
    this.#tick((to - from) >>> 6);
    appendLinkText(record, s, from, to, this.#bounds.maxLinkTextChars);
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

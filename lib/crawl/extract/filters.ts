/**
 * Which links of a page a crawl follows (docs/contract.md "Crawl request": `allowed_domains`,
 * `allow_regex`, `deny_regex`, `deny_extensions`; behaviour 3 for depth). The rules are compiled once
 * per crawl and reused for every link of every page of it.
 */
import { domainToASCII } from 'node:url';
import type { CrawlSettings } from '../../frontier-model.ts';
import { compileLinkRegex } from '../../schemas/link-regex.ts';
import { authorityEnd } from './url.ts';

/**
 * Scrapy's `IGNORED_EXTENSIONS` (`scrapy/linkextractors/__init__.py`, current master): links to these binary and media
 * files are not followed unless the crawl's `deny_extensions` replaces the list.
 */
export const IGNORED_EXTENSIONS: readonly string[] = [
  // archives
  '7z',
  '7zip',
  'bz2',
  'rar',
  'tar',
  'tar.gz',
  'xz',
  'zip',
  // images
  'mng',
  'pct',
  'bmp',
  'gif',
  'jpg',
  'jpeg',
  'png',
  'pst',
  'psp',
  'tif',
  'tiff',
  'ai',
  'drw',
  'dxf',
  'eps',
  'ps',
  'svg',
  'cdr',
  'ico',
  'webp',
  // audio
  'mp3',
  'wma',
  'ogg',
  'wav',
  'ra',
  'aac',
  'mid',
  'au',
  'aiff',
  // video
  '3gp',
  'asf',
  'asx',
  'avi',
  'mov',
  'mp4',
  'mpg',
  'qt',
  'rm',
  'swf',
  'wmv',
  'm4a',
  'm4v',
  'flv',
  'webm',
  // office suites
  'xls',
  'xlsm',
  'xlsx',
  'xltm',
  'xltx',
  'potm',
  'potx',
  'ppt',
  'pptm',
  'pptx',
  'pps',
  'doc',
  'docb',
  'docm',
  'docx',
  'dotm',
  'dotx',
  'odt',
  'ods',
  'odg',
  'odp',
  // other
  'css',
  'pdf',
  'exe',
  'bin',
  'rss',
  'dmg',
  'iso',
  'apk',
  'jar',
  'sh',
  'rb',
  'js',
  'hta',
  'bat',
  'cpl',
  'msi',
  'msp',
  'py',
];

/** Decides whether a link (an absolute http(s) URL) may be followed. */
export type LinkFilter = (url: string) => boolean;

/** The crawl request field whose rule keeps a link from being followed. */
type SkipRule = 'allowed_domains' | 'allow_regex' | 'deny_regex' | 'deny_extensions';

/** The rule that keeps a link (an absolute http(s) URL) from being followed, or undefined when it may be. */
export type LinkRules = (url: string) => SkipRule | undefined;

/** Links kept from being followed, by rule; a rule that kept none is absent. */
export type SkippedLinks = Partial<Record<SkipRule, number>>;

/** The crawl fields the filter is built from. */
type FilterSettings = Pick<CrawlSettings, 'allowed_domains' | 'allow_regex' | 'deny_regex' | 'deny_extensions'>;

const CHAR_QUESTION = 63;
const CHAR_HASH = 35;
const CHAR_DOT = 46;

/** Index just past `scheme://`, or 0 when there is none. */
function afterScheme(url: string): number {
  const i = url.indexOf('://');
  return i < 0 ? 0 : i + 3;
}

/** The URL's host name, lower-cased, without userinfo, port or a trailing dot. */
function hostOf(url: string): string {
  const start = afterScheme(url);
  const end = authorityEnd(url, start);
  const at = url.lastIndexOf('@', end - 1);
  let host = url.slice(at >= start ? at + 1 : start, end);
  if (host.charCodeAt(0) === 91) {
    host = host.slice(0, host.indexOf(']') + 1);
  } else {
    const colon = host.indexOf(':');
    if (colon >= 0) host = host.slice(0, colon);
  }
  if (host.charCodeAt(host.length - 1) === CHAR_DOT) host = host.slice(0, -1);
  return host.toLowerCase();
}

/** The URL's path lower-cased (without `;params`, query and fragment, as Python's `urlparse`). */
function pathOf(url: string): string {
  const start = authorityEnd(url, afterScheme(url));
  let end = start;
  for (; end < url.length; end++) {
    const c = url.charCodeAt(end);
    if (c === CHAR_QUESTION || c === CHAR_HASH) break;
  }
  const lastSlash = url.lastIndexOf('/', end - 1);
  const params = url.indexOf(';', Math.max(lastSlash, start));
  if (params >= 0 && params < end) end = params;
  return url.slice(start, end).toLowerCase();
}

/** `example.COM.` / `.example.com` / `bücher.de` → `example.com` / `example.com` / `xn--bcher-kva.de`. */
function normalizeDomain(domain: string): string {
  let d = domain.trim().toLowerCase();
  while (d.charCodeAt(0) === CHAR_DOT) d = d.slice(1);
  while (d.charCodeAt(d.length - 1) === CHAR_DOT) d = d.slice(0, -1);
  let ascii = true;
  for (let i = 0; i < d.length; i++) if (d.charCodeAt(i) >= 128) ascii = false;
  return ascii ? d : domainToASCII(d) || d;
}

function normalizeExtension(ext: string): string {
  let e = ext.trim().toLowerCase();
  while (e.charCodeAt(0) === CHAR_DOT) e = e.slice(1);
  return e;
}

/**
 * True when the path's last segment ends with `.<ext>` for a listed extension. Multi-part extensions
 * (`tar.gz`) match too, by trying every dot of the last segment: as Scrapy's current
 * `url_has_any_extension` (a suffix test), without looping over the whole list per link.
 */
function hasExtension(path: string, extensions: ReadonlySet<string>): boolean {
  const segment = path.lastIndexOf('/') + 1;
  for (let dot = path.indexOf('.', segment); dot >= 0; dot = path.indexOf('.', dot + 1)) {
    if (extensions.has(path.slice(dot + 1))) return true;
  }
  return false;
}

/** True when `host` is `domain` or a subdomain of it (`a.example.com` for `example.com`). */
function hostInDomain(host: string, domain: string): boolean {
  if (host.length === domain.length) return host === domain;
  return (
    host.length > domain.length &&
    host.charCodeAt(host.length - domain.length - 1) === CHAR_DOT &&
    host.endsWith(domain)
  );
}

const DEFAULT_EXTENSIONS: ReadonlySet<string> = new Set(IGNORED_EXTENSIONS);

/**
 * Compiles a crawl's link rules; the first rule that fails names the link's {@link SkipRule}. A link is followed when
 * all of these hold, checked in this order:
 *
 * 1. `allowed_domains` (when given): its host is one of them or a subdomain of one, comparing host
 *    names case-insensitively (ports ignored; `notexample.com` is not in `example.com`).
 * 2. `allow_regex` (when given): at least one matches somewhere in the URL (a search, as Scrapy's
 *    `re.search`, not a full match).
 * 3. No `deny_regex` matches; deny wins over allow.
 * 4. Its path does not end with `.<ext>` for an extension of `deny_extensions` (case-insensitive;
 *    `.tar.gz` style extensions allowed), which replaces {@link IGNORED_EXTENSIONS} when given; an
 *    empty list denies no extension. The query string is not looked at.
 *
 * @throws when a regex does not compile as RE2 (validation rejects such crawls first).
 */
export function compileLinkRules(settings: FilterSettings): LinkRules {
  const domains = settings.allowed_domains?.map(normalizeDomain).filter((d) => d.length > 0);
  const allow = settings.allow_regex?.map(compileLinkRegex);
  const deny = settings.deny_regex?.map(compileLinkRegex);
  const extensions =
    settings.deny_extensions === undefined
      ? DEFAULT_EXTENSIONS
      : new Set(settings.deny_extensions.map(normalizeExtension).filter((e) => e.length > 0));

  return (url: string): SkipRule | undefined => {
    if (domains !== undefined && domains.length > 0) {
      const host = hostOf(url);
      if (!domains.some((domain) => hostInDomain(host, domain))) return 'allowed_domains';
    }
    if (allow !== undefined && allow.length > 0 && !allow.some((re) => re.matcher(url).find())) return 'allow_regex';
    if (deny?.some((re) => re.matcher(url).find())) return 'deny_regex';
    return extensions.size > 0 && hasExtension(pathOf(url), extensions) ? 'deny_extensions' : undefined;
  };
}

/** {@link compileLinkRules} as a yes/no filter. */
export function compileLinkFilter(settings: FilterSettings): LinkFilter {
  return compile(settings).filter;
}

/** A crawl's compiled rules and the filter over them. */
interface Compiled {
  rules: LinkRules;
  filter: LinkFilter;
}

function compile(settings: FilterSettings): Compiled {
  const rules = compileLinkRules(settings);
  return { rules, filter: (url) => rules(url) === undefined };
}

/** Compiled rules by their settings; crawls with the same rules (most have none) share one. */
const cache = new Map<string, Compiled>();
/** The rules of no settings: the default extensions denied, and nothing denied. */
const NO_RULES = compile({});
const ACCEPT_ALL = compile({ deny_extensions: [] });

/** How many compiled filters {@link linkFilter} keeps: more than the crawls a crawler works on at once. */
export const LINK_FILTER_CACHE_SIZE = 256;

/**
 * The crawl's {@link LinkFilter} (see {@link compileLinkFilter}), compiled once and cached: a crawler
 * calls this for every page, and compiling the regexes per page would dominate. The cache is keyed by
 * the rules themselves rather than by crawlid, so a crawlid reused with other rules never gets stale
 * ones; it is a small LRU of {@link LINK_FILTER_CACHE_SIZE} entries.
 */
export function linkFilter(settings: FilterSettings): LinkFilter {
  return compiled(settings).filter;
}

/** The crawl's {@link LinkRules}, compiled once and cached as {@link linkFilter}'s. */
function linkRules(settings: FilterSettings): LinkRules {
  return compiled(settings).rules;
}

/**
 * The links of `links` the crawl's rules let through, in their order; each one kept back is counted in `skipped` under
 * the rule that kept it.
 */
export function followable<L extends { url: string }>(
  settings: FilterSettings,
  links: readonly L[],
  skipped: SkippedLinks,
): L[] {
  const rules = linkRules(settings);
  const out: L[] = [];
  for (const link of links) {
    const rule = rules(link.url);
    if (rule === undefined) out.push(link);
    else skipped[rule] = (skipped[rule] ?? 0) + 1;
  }
  return out;
}

function compiled(settings: FilterSettings): Compiled {
  // Most crawls set no rules: their two are shared without building a key for every page.
  if (!settings.allowed_domains?.length && !settings.allow_regex?.length && !settings.deny_regex?.length) {
    if (settings.deny_extensions === undefined) return NO_RULES;
    if (settings.deny_extensions.length === 0) return ACCEPT_ALL;
  }
  const key = JSON.stringify([
    settings.allowed_domains,
    settings.allow_regex,
    settings.deny_regex,
    settings.deny_extensions,
  ]);
  let filter = cache.get(key);
  if (filter !== undefined) {
    // Re-inserting moves the entry to the end of the Map's order: most recently used.
    cache.delete(key);
    cache.set(key, filter);
    return filter;
  }
  filter = compile(settings);
  cache.set(key, filter);
  if (cache.size > LINK_FILTER_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
  return filter;
}

/** docs/contract.md behaviour 3: a page's links are followed while its depth is below the crawl's maxdepth. */
export function shouldFollow(depth: number, maxdepth: number): boolean {
  return depth < maxdepth;
}

/**
 * Sitemaps (sitemaps.org protocol 0.9) and robots.txt `Sitemap:` lines, parsed with bounds for hostile input:
 * at most {@link MAX_SITEMAP_BYTES} of XML after gunzip (a gzip bomb stops there), at most
 * {@link MAX_SITEMAP_ENTRIES} entries per file (the protocol's own limits), and no entity expansion: sax in strict
 * mode reads a DOCTYPE as an opaque string and refuses any entity but XML's five and character references, so a
 * billion-laughs or external-entity document yields an error, not gigabytes or a file read.
 */
import { Buffer } from 'node:buffer';
import { gunzipSync } from 'node:zlib';
import sax from 'sax';

/** The most XML bytes read from one sitemap, after gunzip (the protocol: 50 MB uncompressed). */
const MAX_SITEMAP_BYTES = 50 * 1024 * 1024;

/** The most entries read from one sitemap or index (the protocol: 50,000). */
export const MAX_SITEMAP_ENTRIES = 50_000;

/** The most `Sitemap:` lines read from one robots.txt. */
export const MAX_ROBOTS_SITEMAPS = 100;

/** One `<url>` of a urlset or `<sitemap>` of an index. */
export interface SitemapEntry {
  loc: string;
  lastmod?: string;
}

export interface ParsedSitemap {
  /** `urlset`: pages; `sitemapindex`: more sitemaps; `unknown`: neither root element. */
  kind: 'urlset' | 'sitemapindex' | 'unknown';
  entries: SitemapEntry[];
  /** Entries past {@link MAX_SITEMAP_ENTRIES} were not read. */
  truncated: boolean;
  /** Why parsing stopped early (malformed XML, a refused entity); the entries before it are kept. */
  error?: string;
}

/** A sitemap that cannot be read at all (over the size bound after gunzip, a corrupt gzip stream). */
export class SitemapError extends Error {
  override name = 'SitemapError';
}

const GZIP_MAGIC = [0x1f, 0x8b];

/** The XML of a sitemap body: gunzipped when it is a gzip stream (bounded), else the body as UTF-8. */
export function sitemapXml(body: Buffer, text: string | undefined, maxBytes = MAX_SITEMAP_BYTES): string {
  if (body[0] === GZIP_MAGIC[0] && body[1] === GZIP_MAGIC[1]) {
    let xml: Buffer;
    try {
      xml = gunzipSync(body, { maxOutputLength: maxBytes });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || error instanceof RangeError) {
        throw new SitemapError(`the gzip sitemap is over ${maxBytes} bytes uncompressed`);
      }
      throw new SitemapError(`the gzip sitemap cannot be decompressed: ${(error as Error).message}`);
    }
    return xml.toString('utf8');
  }
  const xml = text ?? body.toString('utf8');
  if (Buffer.byteLength(xml) > maxBytes) throw new SitemapError(`the sitemap is over ${maxBytes} bytes`);
  return xml;
}

/** Thrown inside sax's callbacks to stop reading at the entry bound. */
const STOP = Symbol('stop');

/** The local name of a possibly prefixed element name (`sm:loc` → `loc`), lower-case. */
function local(name: string): string {
  const i = name.indexOf(':');
  return (i < 0 ? name : name.slice(i + 1)).toLowerCase();
}

/** Parses a sitemap or sitemap index (see the module doc for the bounds). Never throws on bad XML. */
export function parseSitemap(xml: string, maxEntries = MAX_SITEMAP_ENTRIES): ParsedSitemap {
  const out: ParsedSitemap = { kind: 'unknown', entries: [], truncated: false };
  const parser = sax.parser(true, { trim: true, position: false });
  let depth = 0;
  let entry: SitemapEntry | undefined;
  let field: 'loc' | 'lastmod' | undefined;
  let value = '';
  parser.onopentag = (tag) => {
    depth++;
    const name = local(tag.name);
    if (depth === 1) {
      if (name === 'urlset' || name === 'sitemapindex') out.kind = name;
      return;
    }
    if (depth === 2 && (name === 'url' || name === 'sitemap')) {
      if (out.entries.length >= maxEntries) {
        out.truncated = true;
        throw STOP;
      }
      entry = { loc: '' };
    } else if (depth === 3 && entry && (name === 'loc' || name === 'lastmod')) {
      field = name;
      value = '';
    }
  };
  const onText = (text: string) => {
    // A <loc> is at most a URL: a hostile one cannot grow without bound.
    if (field !== undefined && value.length < 4096) value += text;
  };
  parser.ontext = onText;
  parser.oncdata = onText;
  parser.onclosetag = (tagName) => {
    const name = local(tagName);
    if (depth === 3 && field !== undefined && name === field && entry) {
      if (field === 'loc') entry.loc = value.trim();
      else entry.lastmod = value.trim();
      field = undefined;
    } else if (depth === 2 && entry) {
      if (entry.loc !== '') out.entries.push(entry);
      entry = undefined;
    }
    depth--;
  };
  parser.onerror = (error) => {
    throw error;
  };
  try {
    parser.write(xml).close();
  } catch (error) {
    if (error !== STOP) out.error = (error as Error).message.split('\n')[0];
  }
  return out;
}

/** The `Sitemap:` URLs of a robots.txt (case-insensitive field name, at most {@link MAX_ROBOTS_SITEMAPS}). */
export function robotsSitemaps(robotsTxt: string): string[] {
  const out: string[] = [];
  for (const line of robotsTxt.split(/\r?\n|\r/)) {
    const m = /^\s*sitemap\s*:\s*(\S+)/i.exec(line);
    if (m) out.push(m[1] as string);
    if (out.length >= MAX_ROBOTS_SITEMAPS) break;
  }
  return out;
}

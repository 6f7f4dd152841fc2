/**
 * Charset detection and decoding of fetched bodies (docs/design.md §5). The order follows the HTML
 * encoding-sniffing algorithm, simplified: byte order mark, then the Content-Type `charset`, then a
 * `<meta>` declaration near the start of the document, then UTF-8. Labels are normalised with the
 * WHATWG Encoding Standard's label table, which Node's `TextDecoder` implements (`latin1` and
 * `iso-8859-1` → `windows-1252`, `gb2312` → `gbk`, ...), and Node's `TextDecoder` (full ICU) decodes the
 * legacy encodings too.
 */

import { TextDecoder } from 'node:util';

const DEFAULT_CHARSET = 'utf-8';
/** How far into the body `<meta>` declarations are looked for (the HTML spec prescans 1024 bytes; pages
 * with long heads declare later, so a little more). */
export const META_SCAN_BYTES = 4096;

const decoders = new Map<string, TextDecoder>();

/**
 * The WHATWG name of an encoding label (`' Latin1 '` → `windows-1252`), or undefined when the label is
 * unknown or names the `replacement` encoding, which `TextDecoder` refuses.
 */
export function normalizeCharset(label: string): string | undefined {
  const key = label.trim().toLowerCase();
  if (key === '') return undefined;
  const cached = decoders.get(key);
  if (cached) return cached.encoding;
  try {
    const decoder = new TextDecoder(key, { fatal: false });
    decoders.set(key, decoder);
    return decoder.encoding;
  } catch {
    return undefined;
  }
}

function bomCharset(body: Buffer): string | undefined {
  if (body.length >= 3 && body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) return 'utf-8';
  if (body.length >= 2 && body[0] === 0xff && body[1] === 0xfe) return 'utf-16le';
  if (body.length >= 2 && body[0] === 0xfe && body[1] === 0xff) return 'utf-16be';
  return undefined;
}

/** The raw `charset` parameter of a Content-Type value (quotes removed), if any. */
export function contentTypeCharset(contentType: string | undefined): string | undefined {
  if (!contentType) return undefined;
  const match = /;\s*charset\s*=\s*(?:"([^"]*)"|([^;\s]*))/i.exec(contentType);
  const value = match?.[1] ?? match?.[2];
  return value ? value : undefined;
}

const META_TAG = /<meta\b([^>]*)>/gi;
const ATTRIBUTE = /([^\s=/>]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?/g;

/** The first known charset a `<meta>` declares (a declaration with an unknown label is skipped, as in the HTML prescan). */
function metaCharset(body: Buffer): string | undefined {
  // Latin-1 maps every byte to one char, so ASCII markup reads the same in any ASCII-compatible encoding.
  const head = body
    .subarray(0, META_SCAN_BYTES)
    .toString('latin1')
    .replace(/<!--[\s\S]*?-->/g, '');
  for (const tag of head.matchAll(META_TAG)) {
    const attributes = new Map<string, string>();
    for (const attr of (tag[1] ?? '').matchAll(ATTRIBUTE)) {
      const name = (attr[1] ?? '').toLowerCase();
      if (!attributes.has(name)) attributes.set(name, attr[2] ?? attr[3] ?? attr[4] ?? '');
    }
    const charset = normalizeCharset(attributes.get('charset') ?? '');
    if (charset) return charset;
    if (attributes.get('http-equiv')?.trim().toLowerCase() === 'content-type') {
      // The HTML spec's "extract a character encoding from a meta element": `charset=` anywhere in content.
      const declared = /charset\s*=\s*(?:"([^"]*)"|'([^']*)'|([^;\s"']+))/i.exec(attributes.get('content') ?? '');
      const value = declared?.[1] ?? declared?.[2] ?? declared?.[3];
      const known = normalizeCharset(value ?? '');
      if (known) return known;
    }
  }
  return undefined;
}

/**
 * The charset to decode a body with, as a WHATWG encoding name (`utf-8`, `windows-1251`, `utf-16le`).
 * A byte order mark wins; then the Content-Type `charset`; then `<meta charset>` or
 * `<meta http-equiv="Content-Type" content="...; charset=...">` in the first {@link META_SCAN_BYTES};
 * else UTF-8. Unknown labels are skipped. As in the HTML spec, a `<meta>` that claims UTF-16 means
 * UTF-8 (the bytes were readable as ASCII, so they are not UTF-16), and `x-user-defined` means
 * windows-1252.
 */
export function detectCharset(contentType: string | undefined, body: Buffer): string {
  const bom = bomCharset(body);
  if (bom) return bom;
  const header = contentTypeCharset(contentType);
  const fromHeader = header === undefined ? undefined : normalizeCharset(header);
  if (fromHeader) return fromHeader;
  const fromMeta = metaCharset(body);
  if (fromMeta === 'utf-16le' || fromMeta === 'utf-16be') return 'utf-8';
  if (fromMeta === 'x-user-defined') return 'windows-1252';
  return fromMeta ?? DEFAULT_CHARSET;
}

/**
 * Decodes a body, never throwing: invalid byte sequences become U+FFFD and an unknown charset label
 * falls back to UTF-8. A byte order mark matching the charset is removed.
 */
export function decodeBody(body: Buffer, charset: string): string {
  const name = normalizeCharset(charset) ?? DEFAULT_CHARSET;
  let decoder = decoders.get(name);
  if (!decoder) {
    decoder = new TextDecoder(name, { fatal: false });
    decoders.set(name, decoder);
  }
  return decoder.decode(body);
}

/**
 * A page message as the sink reads it (docs/contract.md "Pages"), and its body as bytes: the bytes the fetcher kept
 * (the response's, `Content-Encoding` undone), from the message or, when the message carries only the first part,
 * whole from the body store (`body_ref`, `s3://` or `file://`).
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { PageItem } from '../crawl/types.ts';

/** A page message with what the sink relies on checked; every other field is passed through as it came. */
export type SinkPage = PageItem;

/**
 * The page in a record's value, or undefined when the value is not a page message (not JSON, or without the
 * string fields every page has). Such a record is skipped, never retried: it would fail the same way every time.
 */
export function parsePage(value: Buffer): SinkPage | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value.toString('utf8'));
  } catch {
    return undefined;
  }
  return asPage(parsed);
}

/** A parsed message as a page, or undefined when it lacks what every page has ({@link parsePage}). */
export function asPage(parsed: unknown): SinkPage | undefined {
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const page = parsed as Partial<SinkPage>;
  for (const field of ['appid', 'crawlid', 'url'] as const) {
    if (typeof page[field] !== 'string' || page[field] === '') return undefined;
  }
  return page as SinkPage;
}

/** Reads a stored body by its `body_ref`. */
export interface BodyReader {
  /**
   * The object's bytes, or undefined when it no longer exists (expired by the bucket's lifecycle, deleted): the page
   * is then written with the part its message carries, marked truncated.
   * @throws on any other failure (the store unreachable): the batch is retried
   */
  read(ref: string): Promise<Buffer | undefined>;
}

/**
 * Reads `file://` references from the local disk and hands `s3://` ones to `s3`.
 * @param s3 reads `s3://bucket/key` (lib/sink/s3-output.ts), or none: an `s3://` reference then fails the batch
 */
export function bodyReader(s3?: BodyReader): BodyReader {
  return {
    async read(ref) {
      if (ref.startsWith('file://')) {
        try {
          return await readFile(fileURLToPath(ref));
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
          throw error;
        }
      }
      if (ref.startsWith('s3://') && s3) return s3.read(ref);
      throw new Error(`sink: cannot read body_ref ${JSON.stringify(ref)} (no reader for it)`);
    },
  };
}

/** Charsets whose text re-encodes to the same bytes with Node's own encoders. */
const UTF8 = new Set(['utf-8', 'utf8', 'us-ascii', 'ascii']);
const LATIN1 = new Set(['latin-1', 'latin1', 'iso-8859-1', 'iso8859-1']);

/** A page's body as bytes, and what the sink had to do to get them. */
export interface BodyBytes {
  bytes: Buffer;
  /** Not the whole body: the fetcher cut it, or only the message's part was there. */
  truncated: boolean;
  /**
   * Set when the text had to be written as UTF-8 because the charset it was fetched in has no encoder here: the
   * response's `Content-Type` then says `charset=utf-8` (lib/sink/http-block.ts).
   */
  reencodedFrom?: string;
  /** The `body_ref` could not be read because its object is gone. */
  refMissing?: boolean;
}

/**
 * The body's bytes: from the body store when the page has a `body_ref` (the whole body unless the fetcher cut it),
 * else from the message: base64 as sent, or the text in its charset. Text in a charset Node cannot encode (legacy
 * multi-byte ones) is written as UTF-8 and says so ({@link BodyBytes.reencodedFrom}).
 */
export async function bodyBytes(page: SinkPage, reader: BodyReader): Promise<BodyBytes> {
  const cut = page.body_cut !== undefined;
  if (typeof page.body_ref === 'string' && page.body_ref !== '') {
    const stored = await reader.read(page.body_ref);
    if (stored) return { bytes: stored, truncated: cut };
    return { ...inlineBytes(page), truncated: true, refMissing: true };
  }
  return { ...inlineBytes(page), truncated: cut || page.body_truncated === true };
}

function inlineBytes(page: SinkPage): Omit<BodyBytes, 'truncated'> {
  const body = typeof page.body === 'string' ? page.body : '';
  if (page.body_encoding === 'base64') return { bytes: Buffer.from(body, 'base64') };
  const charset = String(page.encoding ?? 'utf-8').toLowerCase();
  if (UTF8.has(charset)) return { bytes: Buffer.from(body, 'utf8') };
  // Latin-1 text maps one character to one byte; windows-1252 text does too as long as it has none of the 27
  // characters that charset places at 0x80-0x9f.
  if ((LATIN1.has(charset) || charset === 'windows-1252' || charset === 'cp1252') && isLatin1(body)) {
    return { bytes: Buffer.from(body, 'latin1') };
  }
  if (body === '') return { bytes: Buffer.alloc(0) };
  return { bytes: Buffer.from(body, 'utf8'), reencodedFrom: charset };
}

function isLatin1(text: string): boolean {
  for (let i = 0; i < text.length; i += 1) if (text.charCodeAt(i) > 0xff) return false;
  return true;
}

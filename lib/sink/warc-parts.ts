/**
 * The WARC files of one group of pages (lib/sink/layout.ts): records appended page by page, a new file begun when the
 * next page's records would take the current one past its size limit (`SINK_WARC_MAX_BYTES`; a page's records stay
 * together, so one page larger than the limit makes a file of its own), each file opened by its `warcinfo` record,
 * and beside each its CDXJ index: one line per response record, sorted, as pywb and other replay tools read it.
 */
import { getSurt } from 'warcio';
import { type BuiltRecord, warcinfoRecord } from './warc-records.ts';

/** One finished WARC file. */
export interface WarcPart {
  /** Its number in the group (0 first). */
  n: number;
  /** The file's name (its object key's last segment). */
  name: string;
  chunks: Uint8Array[];
  bytes: number;
  /** Its CDXJ index, sorted, one line per response record. */
  cdxj: string;
}

/** Where a record landed: the file, and the byte range of its gzip member. */
export interface WarcLocation {
  filename: string;
  offset: number;
  length: number;
  /** `response`, or `metadata` for a page without one. */
  record: 'response' | 'metadata';
}

interface OpenPart {
  n: number;
  name: string;
  chunks: Uint8Array[];
  bytes: number;
  /** Bytes of the warcinfo record alone: a part holding only those takes the next page whatever its size. */
  headerBytes: number;
  index: string[];
}

export class WarcParts {
  readonly #nameOf: (part: number) => string;
  readonly #maxBytes: number;
  readonly #isPartOf: string;
  /** Closed files not taken yet ({@link takeClosed}). */
  #closed: WarcPart[] = [];
  /** Files begun so far: the next one's number. */
  #begun = 0;
  #open: OpenPart | undefined;

  /**
   * @param nameOf the file name of the n-th part (0 first)
   * @param maxBytes a file is closed before a page that would take it past this
   * @param isPartOf the warcinfo's `isPartOf` (the crawl)
   */
  constructor(nameOf: (part: number) => string, maxBytes: number, isPartOf: string) {
    this.#nameOf = nameOf;
    this.#maxBytes = maxBytes;
    this.#isPartOf = isPartOf;
  }

  /**
   * Appends one page's records (from lib/sink/warc-records.ts, in order).
   * @param date the page's WARC date: a file begun for it is dated so
   * @returns where its response record went, else its metadata record
   */
  async add(records: BuiltRecord[], date: string): Promise<WarcLocation> {
    const size = records.reduce((n, r) => n + r.bytes.length, 0);
    let part = this.#open;
    if (part && part.bytes > part.headerBytes && part.bytes + size > this.#maxBytes) {
      this.#close(part);
      part = undefined;
    }
    if (!part) part = await this.#begin(date);
    let location: WarcLocation | undefined;
    for (const record of records) {
      const offset = part.bytes;
      part.chunks.push(record.bytes);
      part.bytes += record.bytes.length;
      if (record.type === 'response' && record.url) {
        part.index.push(cdxjLine(record, part.name, offset));
        location ??= { filename: part.name, offset, length: record.bytes.length, record: 'response' };
      } else if (record.type === 'metadata') {
        location ??= { filename: part.name, offset, length: record.bytes.length, record: 'metadata' };
      }
    }
    if (!location) throw new Error('sink: a page without a response or metadata record');
    return location;
  }

  /**
   * The files closed since the last call, to be written now: the caller drops them, so a group holds at most one
   * file (up to its size limit) in memory however many pages it has.
   */
  takeClosed(): WarcPart[] {
    const closed = this.#closed;
    this.#closed = [];
    return closed;
  }

  /** The files not taken yet, the open one closed. */
  finish(): WarcPart[] {
    if (this.#open) this.#close(this.#open);
    return this.takeClosed();
  }

  async #begin(date: string): Promise<OpenPart> {
    const n = this.#begun++;
    const name = this.#nameOf(n);
    const info = await warcinfoRecord(name, date, this.#isPartOf);
    const part: OpenPart = {
      n,
      name,
      chunks: [info.bytes],
      bytes: info.bytes.length,
      headerBytes: info.bytes.length,
      index: [],
    };
    this.#open = part;
    return part;
  }

  #close(part: OpenPart): void {
    const index = part.index.sort();
    this.#closed.push({
      n: part.n,
      name: part.name,
      chunks: part.chunks,
      bytes: part.bytes,
      cdxj: index.length > 0 ? `${index.join('\n')}\n` : '',
    });
    this.#open = undefined;
  }
}

/**
 * A CDXJ line (`<surt> <timestamp14> {json}`) for a response record, with the fields pywb's own indexer writes
 * (offset, length and status as strings).
 */
function cdxjLine(record: BuiltRecord, filename: string, offset: number): string {
  const url = record.url as string;
  let urlkey: string;
  try {
    urlkey = getSurt(url);
  } catch {
    urlkey = url;
  }
  const fields: Record<string, string> = { url };
  if (record.mime) fields.mime = record.mime;
  if (record.status !== undefined) fields.status = String(record.status);
  if (record.digest) fields.digest = record.digest;
  fields.length = String(record.bytes.length);
  fields.offset = String(offset);
  fields.filename = filename;
  return `${urlkey} ${record.timestamp14 ?? ''} ${JSON.stringify(fields)}`;
}

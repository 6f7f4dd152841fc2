/**
 * `crawl --warc <file>`: the crawl's pages as one WARC 1.1 file (docs/outputs.md "One crawl from the CLI"), written as
 * they come with the sink's record building (lib/sink/warc-records.ts): a `warcinfo` record first, then per page the
 * records the sink writes for it (request, response and metadata, or metadata alone for a page without a response),
 * each its own gzip member. Bodies in the body store (`body_ref`) are read whole, as the sink reads them.
 */
import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import { basename } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import { s3ClientSettings } from '../functions/shared/aws.ts';
import type { Variables } from '../lib/config/index.ts';
import { CrawlClusterError } from '../lib/errors.ts';
import { asPage, type BodyReader, bodyBytes, bodyReader } from '../lib/sink/page-body.ts';
import { s3BodyReader } from '../lib/sink/s3-output.ts';
import { pageRecords, type RecordSource, warcDate, warcinfoRecord } from '../lib/sink/warc-records.ts';

/** Reads `s3://` bodies with a client made on the first such reference (most crawls have none). */
function lazyS3Reader(vars: Variables): { reader: BodyReader; close(): void } {
  let client: S3Client | undefined;
  const s3 = s3BodyReader({
    send: (command) => {
      client ??= new S3Client(s3ClientSettings(vars));
      return client.send(command as never);
    },
  });
  return { reader: bodyReader(s3), close: () => client?.destroy() };
}

export class CrawlWarcFile {
  readonly path: string;
  readonly #stream: WriteStream;
  readonly #bodies: { reader: BodyReader; close(): void };
  readonly #isPartOf: string;
  /** Pages are written one after the other, in the order they came. */
  #queue: Promise<void> = Promise.resolve();
  #error: Error | undefined;
  #started = false;
  #closing: Promise<void> | undefined;

  private constructor(path: string, stream: WriteStream, vars: Variables, isPartOf: string) {
    this.path = path;
    this.#stream = stream;
    this.#bodies = lazyS3Reader(vars);
    this.#isPartOf = isPartOf;
  }

  /**
   * Opens (truncates) the file; a path that cannot be written is a clear error before anything is fed.
   * @param isPartOf the warcinfo's `isPartOf`: `<appid>/<crawlid>`
   */
  static async open(path: string, vars: Variables, isPartOf: string): Promise<CrawlWarcFile> {
    const stream = createWriteStream(path, { flags: 'w' });
    try {
      await once(stream, 'open');
    } catch (error) {
      throw new CrawlClusterError(`cannot write ${path}: ${(error as Error).message}`);
    }
    return new CrawlWarcFile(path, stream, vars, isPartOf);
  }

  /**
   * Queues one page message (parsed) for the file. A message that is not a page is skipped.
   * @param source the Kafka record it came in: what makes its records' ids stable
   */
  add(value: unknown, source: RecordSource): void {
    this.#queue = this.#queue.then(async () => {
      if (this.#error) return;
      try {
        await this.#write(value, source);
      } catch (error) {
        this.#error = error instanceof Error ? error : new Error(String(error));
      }
    });
  }

  async #write(value: unknown, source: RecordSource): Promise<void> {
    const page = asPage(value);
    if (!page) return;
    const chunks: Uint8Array[] = [];
    if (!this.#started) {
      // Dated by the first page, so the file's records all come from the crawl's own times.
      this.#started = true;
      chunks.push((await warcinfoRecord(basename(this.path), warcDate(page, source), this.#isPartOf)).bytes);
    }
    const body = await bodyBytes(page, this.#bodies.reader);
    for (const record of await pageRecords(page, body, source)) chunks.push(record.bytes);
    for (const chunk of chunks) {
      if (!this.#stream.write(chunk)) await once(this.#stream, 'drain');
    }
  }

  /**
   * Writes what is queued and closes the file; a second call waits for the first.
   * @throws CrawlClusterError when a page could not be written (a body that could not be read, the disk full)
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    await this.#queue;
    // A crawl without a page still gives a WARC file: its warcinfo record alone.
    if (!this.#started && !this.#error) {
      this.#started = true;
      const info = await warcinfoRecord(basename(this.path), new Date().toISOString(), this.#isPartOf);
      this.#stream.write(info.bytes);
    }
    this.#bodies.close();
    if (!this.#stream.closed) {
      this.#stream.end();
      await once(this.#stream, 'close').catch(() => {});
    }
    if (this.#error) throw new CrawlClusterError(`writing ${this.path}: ${this.#error.message}`);
  }
}

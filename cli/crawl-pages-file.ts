/** `crawl --out <file>`: every page of the crawl as one JSON line. */
import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import { CrawlClusterError } from '../lib/errors.ts';

/** Opens (truncates) the file; a path that cannot be written is a clear error before anything is fed. */
export async function openPagesFile(path: string): Promise<WriteStream> {
  const stream = createWriteStream(path, { flags: 'w' });
  try {
    await once(stream, 'open');
  } catch (error) {
    throw new CrawlClusterError(`cannot write ${path}: ${(error as Error).message}`);
  }
  return stream;
}

export async function closePagesFile(stream: WriteStream | undefined): Promise<void> {
  if (stream === undefined || stream.closed) return;
  stream.end();
  await once(stream, 'close').catch(() => {});
}

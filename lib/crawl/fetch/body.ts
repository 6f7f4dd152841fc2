/**
 * Reading a response body for a fetch (lib/crawl/fetch/fetcher.ts): the content codings undone with node:zlib streams
 * (gzip, deflate raw or wrapped, br), decoded bytes capped so an endless or compressed-bomb body stops at the
 * limit, and whether the body is text worth decoding with its charset.
 */
import { pipeline, type Readable, type Transform } from 'node:stream';
import { setImmediate } from 'node:timers/promises';
import {
  createBrotliDecompress,
  createGunzip,
  createInflate,
  createInflateRaw,
  constants as zlibConstants,
} from 'node:zlib';
import { FetchError } from '../types.ts';
import { isCorruptEncoding, NOT_RETRIED } from './errors.ts';

/**
 * Waits until undici has put a connection whose response just ended back in its pool. It does that one
 * event-loop turn later (setImmediate, to see a server's late close first); a request to the same
 * origin sent before then would open a second connection instead of reusing the first.
 */
export function connectionReleased(): Promise<void> {
  return setImmediate();
}

export type Coding = 'gzip' | 'deflate' | 'br';

/** The codings to undo, in the order the server applied them; undefined when one is not understood. */
export function contentCodings(header: string | undefined): Coding[] | undefined {
  const codings: Coding[] = [];
  for (const raw of (header ?? '').split(',')) {
    const coding = raw.trim().toLowerCase();
    if (coding === '' || coding === 'identity') continue;
    if (coding === 'gzip' || coding === 'x-gzip') codings.push('gzip');
    else if (coding === 'deflate' || coding === 'br') codings.push(coding);
    else return undefined;
  }
  return codings;
}

function decompressor(coding: Coding, first: Buffer): Transform {
  // Flushing like this tolerates a body whose compressed stream lacks its final block, as browsers do.
  if (coding === 'gzip')
    return createGunzip({ flush: zlibConstants.Z_SYNC_FLUSH, finishFlush: zlibConstants.Z_SYNC_FLUSH });
  if (coding === 'br') return createBrotliDecompress();
  // "deflate" should be zlib-wrapped (RFC 9110), but some servers send raw deflate: sniff the zlib header.
  const b0 = first[0] ?? 0;
  const b1 = first[1];
  const zlibWrapped = (b0 & 0x0f) === 8 && (b1 === undefined || ((b0 << 8) | b1) % 31 === 0);
  const options = { flush: zlibConstants.Z_SYNC_FLUSH, finishFlush: zlibConstants.Z_SYNC_FLUSH };
  return zlibWrapped ? createInflate(options) : createInflateRaw(options);
}

/** Resolves with the stream's first chunk, put back so the stream still yields it (undefined: empty). */
function peek(stream: Readable): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const cleanup = () => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      cleanup();
      stream.pause();
      stream.unshift(chunk);
      resolve(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(undefined);
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    stream.on('data', onData).once('end', onEnd).once('error', onError);
  });
}

/** Why a body was cut: at `MAX_BODY_BYTES`, or because the memory budget of bodies in flight was full. */
type BodyCut = 'max_body_bytes' | 'memory_budget';

interface BodyRead {
  body: Buffer;
  /** Why the body was cut, when it was. */
  cut?: BodyCut;
  /** False when the body is still encoded with a coding we do not undo. */
  decoded: boolean;
}

/**
 * Reads a body through its decompressors, keeping at most `maxBytes` decoded bytes: reading stops and
 * the streams are destroyed as soon as more arrives, so an endless or huge body never buffers beyond
 * the limit (plus one chunk in flight per stream).
 */
export async function readBody(
  raw: Readable,
  codings: Coding[] | undefined,
  maxBytes: number,
  signal: AbortSignal,
  /**
   * Asked for room for every decoded chunk before it is kept (the process's body budget): reading waits while it
   * waits, and stops with `memory_budget` when it answers false.
   */
  room?: (bytes: number) => Promise<boolean>,
): Promise<BodyRead> {
  let stream = raw;
  let decodeError: FetchError | undefined;
  try {
    for (const coding of [...(codings ?? [])].reverse()) {
      const first = await peek(stream);
      if (first === undefined) return { body: Buffer.alloc(0), decoded: true };
      const inflater = decompressor(coding, first);
      inflater.once('error', (error: Error) => {
        // Only the decompressor's own verdict on the bytes; a socket error the pipeline passes on stays what it is.
        if (!isCorruptEncoding(error)) return;
        const message = `body does not decode as ${coding}: ${error.message}${NOT_RETRIED}`;
        decodeError ??= new FetchError('bad_response', message, { cause: error });
      });
      stream = pipeline(stream, inflater, () => undefined);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let cut: BodyCut | undefined;
    for await (const data of stream) {
      signal.throwIfAborted();
      let chunk = data as Buffer;
      const over = chunk.length > maxBytes - size;
      if (over) chunk = chunk.subarray(0, maxBytes - size);
      if (room && chunk.length > 0 && !(await room(chunk.length))) {
        cut = 'memory_budget';
        break;
      }
      if (chunk.length > 0) chunks.push(chunk);
      size += chunk.length;
      if (over) {
        cut = 'max_body_bytes';
        break;
      }
    }
    if (cut === undefined) await connectionReleased();
    const read: BodyRead = { body: Buffer.concat(chunks, size), decoded: codings !== undefined };
    if (cut !== undefined) read.cut = cut;
    return read;
  } catch (error) {
    throw decodeError ?? error;
  } finally {
    // Stops the download; undici closes the connection when its body is destroyed unread.
    if (!raw.readableEnded) raw.destroy();
    if (stream !== raw) stream.destroy();
  }
}

const TEXTUAL_TYPES = new Set([
  'application/xml',
  'application/json',
  'application/javascript',
  'application/ecmascript',
  'application/x-javascript',
]);

/** HTML, XML, JSON, JavaScript and text/*; with no Content-Type, anything without NUL bytes up front. */
export function isTextual(contentType: string | undefined, body: Buffer): boolean {
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  if (!type) return !body.subarray(0, 1024).includes(0) || body[0] === 0xff || body[0] === 0xfe;
  return type.startsWith('text/') || type.endsWith('+xml') || type.endsWith('+json') || TEXTUAL_TYPES.has(type);
}

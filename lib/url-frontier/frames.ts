/**
 * Server-stream writes for the URL Frontier service, several gRPC messages per HTTP/2 write.
 *
 * grpc-js writes every message of a stream as its own HTTP/2 DATA frame and waits for that write's callback
 * before it takes the next one, so a GetURLs stream of 100,000 URLs costs 100,000 frames and event-loop turns
 * on both ends. The gRPC wire format does not tie messages to frames (each message is `flag byte, 4-byte length,
 * bytes`, and one DATA frame may carry any number of them), so this writer frames the messages itself and writes
 * them to the call's HTTP/2 stream in chunks of up to {@link FRAME_CHUNK_BYTES}: a few writes and event-loop turns
 * per chunk instead of per URL. The frontier row of bench/RESULTS.md is measured with it.
 *
 * The HTTP/2 stream is not part of grpc-js's public API, so the writer looks for exactly what it needs (the call's
 * `stream`, `maybeSendMetadata` and the method's `serialize`, present in the pinned @grpc/grpc-js 1.14) and falls
 * back to `call.write` per message when any of it is missing (another grpc-js version, server interceptors).
 * test/integration/url-frontier-batches.test.ts fails when the fast path is not taken with the pinned version (a
 * GetURLs stream of 3,000 URLs must arrive in far fewer HTTP/2 DATA chunks than messages).
 */
import type * as grpc from '@grpc/grpc-js';

/** Bytes gathered before one write to the HTTP/2 stream (a chunk is written once it reaches this). */
export const FRAME_CHUNK_BYTES = 64 * 1024;

/** The parts of a grpc-js server call the fast path writes through. */
interface RawCall {
  stream: {
    write(chunk: Buffer): boolean;
    once(event: 'drain' | 'close', listener: () => void): unknown;
    off(event: 'drain' | 'close', listener: () => void): unknown;
    readonly destroyed: boolean;
    readonly writableEnded: boolean;
    readonly writableNeedDrain: boolean;
  };
  maybeSendMetadata(): void;
  handler: { serialize(value: unknown): Buffer };
}

type WritableCall = grpc.ServerWritableStream<unknown, unknown> | grpc.ServerDuplexStream<unknown, unknown>;

/** The call's grpc-js internals when they are all there, else undefined. */
function rawCallOf(call: WritableCall): RawCall | undefined {
  const inner = (call as unknown as { call?: Partial<RawCall> }).call;
  const stream = inner?.stream as Partial<RawCall['stream']> | undefined;
  if (
    !inner ||
    typeof inner.maybeSendMetadata !== 'function' ||
    typeof inner.handler?.serialize !== 'function' ||
    !stream ||
    typeof stream.write !== 'function' ||
    typeof stream.once !== 'function' ||
    typeof stream.off !== 'function' ||
    typeof stream.destroyed !== 'boolean' ||
    typeof stream.writableNeedDrain !== 'boolean'
  )
    return undefined;
  return inner as RawCall;
}

/** Something that emits 'drain' and 'close': the HTTP/2 stream, or the grpc-js call. */
interface Drainable {
  once(event: 'drain' | 'close', listener: () => void): unknown;
  off(event: 'drain' | 'close', listener: () => void): unknown;
}

/** Resolves on the next 'drain' or 'close', whichever comes first. */
function drained(stream: Drainable): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      stream.off('drain', done);
      stream.off('close', done);
      resolve();
    };
    stream.once('drain', done);
    stream.once('close', done);
  });
}

/**
 * Writes a server stream's messages. `write` returns undefined while the stream takes more, or a promise to await
 * when it is full (flow control); messages still pending are written at the latest on the next event-loop turn,
 * so a slow producer's messages (PutURLs acks) are not held back. `end` writes what is pending and ends the call.
 */
export class FrameWriter {
  readonly #call: WritableCall;
  readonly #raw: RawCall | undefined;
  #parts: Buffer[] = [];
  #bytes = 0;
  #scheduled = false;

  constructor(call: WritableCall) {
    this.#call = call;
    this.#raw = rawCallOf(call);
  }

  /** True when messages go out several per HTTP/2 write (false: one `call.write` each). */
  get batched(): boolean {
    return this.#raw !== undefined;
  }

  write(message: object): Promise<void> | undefined {
    const raw = this.#raw;
    if (!raw) {
      if (this.#call.write(message)) return undefined;
      return new Promise<void>((resolve) => this.#call.once('drain', resolve));
    }
    const body = raw.handler.serialize(message);
    const head = Buffer.allocUnsafe(5);
    head[0] = 0; // not compressed
    head.writeUInt32BE(body.length, 1);
    this.#parts.push(head, body);
    this.#bytes += 5 + body.length;
    if (this.#bytes >= FRAME_CHUNK_BYTES) return this.flush();
    this.#schedule();
    return undefined;
  }

  /**
   * Queues bytes that already are gRPC frames (whole messages, each with its 5-byte header; wire.ts). Only when
   * {@link batched}: without the fast path there is no stream to write bytes to.
   */
  writeFramed(frames: Buffer): Promise<void> | undefined {
    if (!this.#raw) throw new Error('FrameWriter.writeFramed needs the batched path');
    this.#parts.push(frames);
    this.#bytes += frames.length;
    if (this.#bytes >= FRAME_CHUNK_BYTES) return this.flush();
    this.#schedule();
    return undefined;
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      // Nobody awaits this write: the next write or flush of the producer waits if the stream is full (a wait here
      // would leave a pair of listeners on the stream per turn until it drains).
      this.#writePending();
    });
  }

  /** Writes the pending messages now; a promise when the stream is full. */
  flush(): Promise<void> | undefined {
    const raw = this.#raw;
    if (!raw || this.#writePending()) return undefined;
    return drained(raw.stream);
  }

  /** Writes the pending messages: false when the stream is full after it. */
  #writePending(): boolean {
    const raw = this.#raw;
    if (!raw || this.#parts.length === 0) return true;
    const chunk = Buffer.concat(this.#parts, this.#bytes);
    this.#parts = [];
    this.#bytes = 0;
    const stream = raw.stream;
    if (stream.destroyed || stream.writableEnded) return true; // cancelled: nobody reads any more
    raw.maybeSendMetadata();
    return stream.write(chunk);
  }

  /** True while the peer does not take what was written (HTTP/2 flow control): the caller should stop reading. */
  get congested(): boolean {
    return this.#raw ? this.#raw.stream.writableNeedDrain : this.#call.writableNeedDrain;
  }

  /** Resolves once the stream takes more again (its next 'drain') or is closed. */
  drained(): Promise<void> {
    return drained(this.#raw ? this.#raw.stream : this.#call);
  }

  /** Writes what is pending, then ends the call with status OK. */
  async end(): Promise<void> {
    await this.flush();
    this.#call.end();
  }
}

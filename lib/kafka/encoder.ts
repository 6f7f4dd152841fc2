/**
 * Cheaper encoding for kafkajs's protocol Encoder, which every produce request is built with.
 *
 * kafkajs builds a request from nested encoders (record → batch body → batch → partition → topic → request → size
 * prefix) and copies each level into the next, so kafkajs alone copies a page message about nine times on its way
 * to the socket, into buffers grown with `Buffer.alloc` (zero-filled) from 512 bytes. Installed here, on the class's
 * prototype (lib/kafka/client.ts imports this module):
 * - **Chunks instead of copies.** An encoder is a list of chunks (views of bytes already written) and a tail
 *   buffer it writes into (`buf`, `offset`). A buffer or nested encoder of at least {@link REF_MIN_BYTES} is
 *   appended by reference: the tail so far becomes a chunk, then the other's bytes are added as chunks, and writing
 *   goes on in the rest of the tail. `buffer` joins the chunks once (and keeps the result), `size()` counts them.
 *   With these, a page is copied three times: into the batch body kafkajs checksums, into the batch it hands to
 *   `writeBytes`, and into the request the connection writes. Everything appended is only read: kafkajs never
 *   writes into a buffer it was given, and an encoder only ever appends, so a view never changes under a reader.
 * - `ensureAvailable` grows with `Buffer.allocUnsafe`: only the bytes up to `offset` are ever read, and every byte
 *   below `offset` has been written.
 * - `writeUVarInt` (each record's lengths) writes its bytes in place instead of through an array and a Buffer.
 *
 * The bytes produced are the same; test/unit/kafka-encoder.test.ts encodes record batches and produce requests with
 * and without this and compares them. kafkajs is pinned (package.json). Where kafkajs is not a module of its own (a
 * bundle that inlines it), this does nothing.
 */
import { kafkajsInternal } from './kafkajs-internal.ts';

interface KafkajsEncoder {
  buf: Buffer;
  offset: number;
  /** Bytes written before the tail `buf`, in order (absent: none). */
  chunks?: Buffer[];
  /** Their total length. */
  chunkBytes?: number;
  ensureAvailable(length: number): void;
  writeInt32(value: number): KafkajsEncoder;
}
interface KafkajsEncoderClass {
  prototype: KafkajsEncoder & Record<string, unknown>;
}

/** kafkajs's Encoder class, or undefined where it cannot be loaded as a module of its own. */
const KafkajsEncoder = kafkajsInternal<KafkajsEncoderClass>('src/protocol/encoder.js');

/** The smallest power of two above `n` (kafkajs's `nextPowerOfTwo`, which the grown sizes keep). */
function nextPowerOfTwo(n: number): number {
  return 1 << (31 - Math.clz32(n) + 1);
}

function ensureAvailable(this: KafkajsEncoder, length: number): void {
  const need = this.offset + length;
  if (need <= this.buf.length) return;
  const grown = Buffer.allocUnsafe(nextPowerOfTwo(need));
  this.buf.copy(grown, 0, 0, this.offset);
  this.buf = grown;
}

/** Buffers and nested encoders at least this big are appended by reference; smaller ones are copied. */
const REF_MIN_BYTES = 1024;

function isEncoder(v: unknown): v is KafkajsEncoder {
  return v != null && Buffer.isBuffer((v as KafkajsEncoder).buf);
}

/** Ends the tail: what it holds becomes a chunk, and writing goes on in the rest of its buffer. */
function commitTail(e: KafkajsEncoder): void {
  if (e.offset === 0) return;
  appendChunk(e, e.buf.subarray(0, e.offset));
  e.buf = e.buf.subarray(e.offset);
  e.offset = 0;
}

function appendChunk(e: KafkajsEncoder, bytes: Buffer): void {
  if (e.chunks === undefined) e.chunks = [bytes];
  else e.chunks.push(bytes);
  e.chunkBytes = (e.chunkBytes ?? 0) + bytes.length;
}

function size(this: KafkajsEncoder): number {
  return (this.chunkBytes ?? 0) + this.offset;
}

/** kafkajs's `buffer` getter: all bytes written. With chunks, joined once; the encoder keeps the joined buffer. */
function buffer(this: KafkajsEncoder): Buffer {
  if (this.chunks === undefined) return this.buf.subarray(0, this.offset);
  const total = (this.chunkBytes ?? 0) + this.offset;
  this.chunks.push(this.buf.subarray(0, this.offset));
  const all = Buffer.concat(this.chunks, total);
  this.chunks = undefined;
  this.chunkBytes = 0;
  this.buf = all;
  this.offset = total;
  return all;
}

function writeBufferInternal(this: KafkajsEncoder, bytes: Buffer): void {
  if (bytes.length >= REF_MIN_BYTES) {
    commitTail(this);
    appendChunk(this, bytes);
    return;
  }
  this.ensureAvailable(bytes.length);
  bytes.copy(this.buf, this.offset, 0);
  this.offset += bytes.length;
}

/** Appends another encoder's bytes: by reference when it is big or already in chunks, else copied. */
function appendEncoder(e: KafkajsEncoder, other: KafkajsEncoder): void {
  if (other.chunks === undefined && other.offset < REF_MIN_BYTES) {
    e.ensureAvailable(other.offset);
    other.buf.copy(e.buf, e.offset, 0, other.offset);
    e.offset += other.offset;
    return;
  }
  commitTail(e);
  for (const c of other.chunks ?? []) appendChunk(e, c);
  if (other.offset > 0) appendChunk(e, other.buf.subarray(0, other.offset));
}

function writeEncoder(this: KafkajsEncoder, value: unknown): KafkajsEncoder {
  if (!isEncoder(value)) throw new Error('value should be an instance of Encoder');
  appendEncoder(this, value);
  return this;
}

function writeEncoderArray(this: KafkajsEncoder, value: unknown): KafkajsEncoder {
  if (!Array.isArray(value) || !value.every(isEncoder))
    throw new Error('all values should be an instance of Encoder[]');
  // The small ones go into the tail: grow it once for all of them.
  let small = 0;
  for (const e of value) if (e.chunks === undefined && e.offset < REF_MIN_BYTES) small += e.offset;
  this.ensureAvailable(small);
  for (const e of value) appendEncoder(this, e);
  return this;
}

/** kafkajs's writeBytes for a Buffer (length, then the bytes), without first growing the tail to hold a big one. */
function writeBytes(this: KafkajsEncoder, value: unknown): KafkajsEncoder {
  if (!Buffer.isBuffer(value) || value.length < REF_MIN_BYTES) return originalWriteBytes?.call(this, value) ?? this;
  this.writeInt32(value.length);
  commitTail(this);
  appendChunk(this, value);
  return this;
}

function writeUVarInt(this: KafkajsEncoder, value: number): KafkajsEncoder {
  this.ensureAvailable(5);
  let v = value;
  // kafkajs's loop: 7 bits at a time while any bit above the low 7 of the 32-bit value is set.
  while ((v & 0xffffff80) !== 0) {
    this.buf[this.offset++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  this.buf[this.offset++] = v & 0x7f;
  return this;
}

/**
 * The methods installed, by name (the test compares against kafkajs's originals).
 * @public (imported by a test's child process, which knip cannot see)
 */
export const ENCODER_METHODS = {
  ensureAvailable,
  writeBufferInternal,
  writeEncoder,
  writeEncoderArray,
  writeBytes,
  writeUVarInt,
  size,
} as const;

/**
 * Whether kafkajs's Encoder uses the methods above.
 * @public (imported by a test's child process, which knip cannot see)
 */
export function kafkajsUsesFastEncoder(): boolean {
  return KafkajsEncoder !== undefined && KafkajsEncoder.prototype.ensureAvailable === ensureAvailable;
}

/** kafkajs's own writeBytes, for strings, null and small buffers. */
const originalWriteBytes = KafkajsEncoder?.prototype.writeBytes as
  | ((this: KafkajsEncoder, value: unknown) => KafkajsEncoder)
  | undefined;

if (KafkajsEncoder !== undefined) {
  Object.assign(KafkajsEncoder.prototype, ENCODER_METHODS);
  Object.defineProperty(KafkajsEncoder.prototype, 'buffer', { get: buffer, configurable: true });
}

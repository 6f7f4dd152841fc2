/**
 * Cheaper buffer growth for kafkajs's protocol Encoder, which every produce request is built with. kafkajs grows an
 * Encoder's buffer with `Buffer.alloc` (zero-filled) to the next power of two, and copies each page message about
 * six times on its way into a request (record → batch body → batch → partition → topic → request), growing each
 * buffer from 512 bytes. On the crawl bench that growth was ≈ 17 µs of a worker's ≈ 550 µs per plain page, most of
 * it zero-filling memory that is overwritten at once (bench/PROFILE.md, sixth round).
 *
 * Installed here, on the class's prototype (lib/kafka/client.ts imports this module):
 * - `ensureAvailable` grows with `Buffer.allocUnsafe`: only the bytes up to `offset` are ever read (the `buffer`
 *   getter slices there), and every byte below `offset` has been written;
 * - `writeEncoderArray` (the records of a batch, the partitions of a topic...) grows once for the whole array;
 * - `writeUVarInt` (each record's lengths) writes its bytes in place instead of through an array and a Buffer.
 *
 * The bytes produced are the same; test/unit/kafka-encoder.test.ts encodes record batches and produce requests with
 * and without this and compares them. kafkajs is pinned (package.json). Where kafkajs is not a module of its own (the
 * Lambda functions' esbuild bundles), this does nothing.
 */
import { createRequire } from 'node:module';

interface KafkajsEncoder {
  buf: Buffer;
  offset: number;
  ensureAvailable(length: number): void;
}
interface KafkajsEncoderClass {
  prototype: KafkajsEncoder & Record<string, unknown>;
}

const require = createRequire(import.meta.url);

/** kafkajs's Encoder class, or undefined where it cannot be loaded as a module of its own. */
const KafkajsEncoder: KafkajsEncoderClass | undefined = (() => {
  try {
    return require('kafkajs/src/protocol/encoder.js') as KafkajsEncoderClass;
  } catch {
    return undefined;
  }
})();

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

function writeEncoderArray(this: KafkajsEncoder, value: unknown): KafkajsEncoder {
  if (!Array.isArray(value) || value.some((v) => v == null || !Buffer.isBuffer((v as KafkajsEncoder).buf)))
    throw new Error('all values should be an instance of Encoder[]');
  const encoders = value as KafkajsEncoder[];
  let total = 0;
  for (const e of encoders) total += e.offset;
  this.ensureAvailable(total);
  for (const e of encoders) {
    e.buf.copy(this.buf, this.offset, 0, e.offset);
    this.offset += e.offset;
  }
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

/** The methods installed, by name (the test compares against kafkajs's originals). */
export const ENCODER_METHODS = { ensureAvailable, writeEncoderArray, writeUVarInt } as const;

/** Whether kafkajs's Encoder uses the methods above. */
export function kafkajsUsesFastEncoder(): boolean {
  return KafkajsEncoder !== undefined && KafkajsEncoder.prototype.ensureAvailable === ensureAvailable;
}

if (KafkajsEncoder !== undefined) Object.assign(KafkajsEncoder.prototype, ENCODER_METHODS);

/**
 * CRC-32C (Castagnoli) installed in place of kafkajs's own, which checksums every record batch it produces one byte
 * at a time in JS: with page messages of tens of KB that is a visible share of a crawler worker's CPU. Installed is
 * the native one of `@node-rs/crc32` (the CPU's CRC32C instructions), else, where its binary does not load,
 * {@link crc32c} below, slicing-by-8 in JS (eight table lookups per 8 bytes instead of one per byte).
 * Loading this module before kafkajs first builds a record batch puts the function in Node's module cache under the
 * file name of kafkajs's `src/protocol/recordBatch/crc32C/index.js`, so kafkajs's `require('../crc32C')` gets it; both
 * have its contract (a Buffer in, the unsigned CRC out). lib/kafka/client.ts imports it before kafkajs; in the Lambda
 * functions' bundles, where kafkajs is an external package that loads before the bundle's own code, it still comes
 * first, because kafkajs requires its record batch modules only when it first produces or fetches
 * (test/cdk/lambda-bundle.test.ts checks it on a bundle). kafkajs is pinned (package.json), and
 * test/unit/kafka-crc32c.test.ts checks the checksums of both against kafkajs's own and that a process loading
 * lib/kafka/client.ts uses the installed one.
 */
import { createRequire, Module } from 'node:module';
import { endianness } from 'node:os';

/** The Castagnoli polynomial, reflected. */
const POLY = 0x82f63b78;

/** T[k][b]: the CRC of byte b followed by k zero bytes (slicing-by-8). */
const T: Int32Array[] = (() => {
  const tables = Array.from({ length: 8 }, () => new Int32Array(256));
  const t0 = tables[0] as Int32Array;
  for (let b = 0; b < 256; b++) {
    let c = b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1;
    t0[b] = c;
  }
  for (let k = 1; k < 8; k++) {
    const prev = tables[k - 1] as Int32Array;
    const t = tables[k] as Int32Array;
    for (let b = 0; b < 256; b++) t[b] = ((prev[b] as number) >>> 8) ^ (t0[(prev[b] as number) & 0xff] as number);
  }
  return tables;
})();
const [T0, T1, T2, T3, T4, T5, T6, T7] = T as [
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
];

const LITTLE_ENDIAN = endianness() === 'LE';

/** The CRC-32C of `buf`, unsigned. */
export function crc32c(buf: Uint8Array): number {
  let crc = -1;
  let i = 0;
  const n = buf.length;
  // Byte by byte up to a 4-byte boundary of the underlying memory, then 8 bytes at a time as two 32-bit words.
  const lead = Math.min(n, (4 - (buf.byteOffset & 3)) & 3);
  for (; i < lead; i++) crc = (T0[(crc ^ (buf[i] as number)) & 0xff] as number) ^ (crc >>> 8);
  const words = LITTLE_ENDIAN ? (n - i) >>> 3 : 0;
  if (words > 0) {
    // Little-endian words: the byte order the CRC consumes (a big-endian host takes the byte loop).
    const w = new Int32Array(buf.buffer, buf.byteOffset + i, words * 2);
    for (let k = 0; k < w.length; k += 2) {
      const lo = crc ^ (w[k] as number);
      const hi = w[k + 1] as number;
      crc =
        (T7[lo & 0xff] as number) ^
        (T6[(lo >>> 8) & 0xff] as number) ^
        (T5[(lo >>> 16) & 0xff] as number) ^
        (T4[lo >>> 24] as number) ^
        (T3[hi & 0xff] as number) ^
        (T2[(hi >>> 8) & 0xff] as number) ^
        (T1[(hi >>> 16) & 0xff] as number) ^
        (T0[hi >>> 24] as number);
    }
    i += words * 8;
  }
  for (; i < n; i++) crc = (T0[(crc ^ (buf[i] as number)) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ -1) >>> 0;
}

const require = createRequire(import.meta.url);

/**
 * The file of kafkajs's CRC-32C module, as Node's module cache names it; undefined where kafkajs is not a module
 * of its own (a bundle that inlines it; the Lambda functions keep it in node_modules for this).
 * @public (imported by a test's child process, which knip cannot see)
 */
export const KAFKAJS_CRC32C_FILE: string | undefined = (() => {
  try {
    return require.resolve('kafkajs/src/protocol/recordBatch/crc32C/index.js');
  } catch {
    return undefined;
  }
})();

/** `@node-rs/crc32`'s CRC-32C, where its native binary loads for this platform. */
export const nativeCrc32c: ((buf: Uint8Array) => number) | undefined = (() => {
  try {
    return (require('@node-rs/crc32') as { crc32c: (buf: Uint8Array) => number }).crc32c;
  } catch {
    return undefined;
  }
})();

/** What kafkajs checksums record batches with once this module is loaded: the native one, else {@link crc32c}. */
export const installedCrc32c: (buf: Uint8Array) => number = nativeCrc32c ?? crc32c;

/**
 * Whether kafkajs's record batches are checksummed by {@link installedCrc32c} (false: kafkajs loaded first).
 * @public (imported by a test's child process, which knip cannot see)
 */
export function kafkajsUsesFastCrc32c(): boolean {
  return KAFKAJS_CRC32C_FILE !== undefined && require.cache[KAFKAJS_CRC32C_FILE]?.exports === installedCrc32c;
}

if (KAFKAJS_CRC32C_FILE !== undefined && require.cache[KAFKAJS_CRC32C_FILE] === undefined) {
  const m = new Module(KAFKAJS_CRC32C_FILE);
  m.filename = KAFKAJS_CRC32C_FILE;
  m.loaded = true;
  m.exports = installedCrc32c;
  require.cache[KAFKAJS_CRC32C_FILE] = m;
}

/**
 * kafkajs's Encoder with the buffer growth of lib/kafka/encoder.ts: the same bytes as kafkajs's own for record
 * batches and produce requests of every size class, and in effect in a process that loads lib/kafka/client.ts.
 * Each side runs in a process of its own, because the patch changes kafkajs's class for the whole process.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');

/**
 * Encodes varints, a record batch and a produce request per case and prints one line per case (its hex, or its
 * SHA-256 for large ones). Record values from 0 bytes to 300 KB cross every growth step, including the 4 KB where
 * `Buffer.allocUnsafe` leaves its pool.
 */
const ENCODE = `
const { createHash } = await import('node:crypto');
const { createRequire } = await import('node:module');
const require = createRequire(import.meta.url);
const Encoder = require('kafkajs/src/protocol/encoder.js');
const { RecordBatch } = require('kafkajs/src/protocol/recordBatch/v0/index.js');
const Record = require('kafkajs/src/protocol/recordBatch/record/v0/index.js');
const Produce = require('kafkajs/src/protocol/requests/produce/v3/request.js');
const out = [];
const digest = (b) => (b.length <= 64 ? b.toString('hex') : createHash('sha256').update(b).digest('hex') + '/' + b.length);
// A value with no zero bytes, so a byte left unwritten (zero in kafkajs's buffers) would show.
const value = (n, seed) => Buffer.from(Array.from({ length: n }, (_, i) => 1 + ((i * 31 + seed) % 255)));
for (const v of [0, 1, 63, 64, 127, 128, 300, 16383, 16384, 2 ** 21, 2 ** 28, 2 ** 31 - 1, -1, -64, -65, -(2 ** 31)])
  out.push('varint ' + v + ' ' + digest(new Encoder().writeVarInt(v).buffer) + ' ' + digest(new Encoder().writeUVarInt(v >>> 0).buffer));
const sizes = [0, 1, 100, 400, 511, 512, 513, 4000, 4096, 5000, 32768, 40000, 300000];
for (const [i, n] of sizes.entries()) {
  const records = Array.from({ length: 1 + (i % 4) * 5 }, (_, k) =>
    Record({ offsetDelta: k, timestampDelta: k * 1000, key: k % 2 ? null : Buffer.from('key-' + k), value: value(n + k, i + k), headers: k % 3 ? {} : { h: 'x', list: ['a', 'bc'] } }),
  );
  const batch = await RecordBatch({ records, firstTimestamp: 1700000000000, maxTimestamp: 1700000001000, lastOffsetDelta: records.length - 1 });
  out.push('batch ' + n + ' ' + digest(batch.buffer));
}
const request = Produce({
  acks: -1,
  timeout: 30000,
  topicData: [
    { topic: 'a.crawled_firehose', partitions: sizes.slice(0, 6).map((n, p) => ({ partition: p, firstSequence: p, messages: [{ key: 'k', value: value(n, p), timestamp: 1700000000000 + p }, { value: value(n * 3, p + 1), timestamp: 1700000000000 }] })) },
    { topic: 'b', partitions: [{ partition: 0, firstSequence: 0, messages: sizes.map((n, k) => ({ value: value(n, k), timestamp: 1700000000000 + k })) }] },
  ],
});
out.push('produce ' + digest((await request.encode()).buffer));
// Encoders nested in encoders, one of them twice, small and big parts mixed, writing on after reading the bytes.
{
  const big = value(3000, 7);
  const small = value(10, 8);
  const inner = new Encoder().writeInt32(1).writeBuffer(big).writeInt8(2);
  const outer = new Encoder().writeInt16(3).writeEncoder(inner).writeEncoder(inner);
  outer.writeEncoderArray([inner, new Encoder().writeBuffer(small), new Encoder().writeInt8(5), inner]);
  const first = outer.buffer;
  outer.writeBytes(big).writeBytes(small).writeBytes('str').writeBytes(null).writeVarIntBytes(big).writeInt32(9);
  const again = new Encoder().writeEncoder(outer).writeInt8(6);
  out.push('nested ' + digest(first) + ' ' + digest(outer.buffer) + ' ' + outer.size() + ' ' + digest(inner.buffer) + ' ' + digest(again.buffer) + ' ' + again.size());
}
console.log(JSON.stringify(out));
`;

function encode(patched: boolean): string[] {
  const script = `${patched ? "await import('./lib/kafka/client.ts');\n" : ''}${ENCODE}`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
  });
  return JSON.parse(out) as string[];
}

describe("kafkajs's Encoder with lib/kafka/encoder.ts", () => {
  it('encodes varints, record batches and produce requests to the same bytes as kafkajs alone', () => {
    const own = encode(false);
    const fast = encode(true);
    expect(own).toHaveLength(16 + 13 + 1 + 1);
    expect(fast).toEqual(own);
    // The cases are distinct (a digest of empty output would make the comparison vacuous).
    expect(new Set(own).size).toBe(own.length);
    expect(own[0]).toBe('varint 0 00 00');
    expect(own[12]).toBe('varint -1 01 ffffffff0f');
  });

  it('is in effect in a process that loads lib/kafka/client.ts', () => {
    const script = [
      "await import('./lib/kafka/client.ts');",
      "const { ENCODER_METHODS, kafkajsUsesFastEncoder } = await import('./lib/kafka/encoder.ts');",
      "const { createRequire } = await import('node:module');",
      "const Encoder = createRequire(import.meta.url)('kafkajs/src/protocol/encoder.js');",
      'const e = new Encoder();',
      'e.writeBuffer(Buffer.alloc(3000, 1));',
      'e.writeBuffer(Buffer.alloc(2000, 2));',
      'e.writeInt8(3);',
      'const chunks = e.chunks.length;',
      'const small = new Encoder();',
      'small.writeBuffer(Buffer.alloc(600, 4));',
      'small.writeBuffer(Buffer.alloc(300, 5));',
      'console.log(JSON.stringify([kafkajsUsesFastEncoder(), Encoder.prototype.ensureAvailable === ENCODER_METHODS.ensureAvailable, chunks, e.size(), e.buffer.length, e.buffer[2999], e.buffer[3000], e.buffer[5000], e.chunks, small.buf.length, small.chunks]));',
    ].join('\n');
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
    // The big buffers were kept by reference (two chunks, the tail holding the last byte) and joined once when read;
    // small ones are copied into a tail grown to the next power of two, as kafkajs does.
    expect(JSON.parse(out)).toEqual([true, true, 2, 5001, 5001, 1, 2, 3, null, 1024, null]);
  });
});

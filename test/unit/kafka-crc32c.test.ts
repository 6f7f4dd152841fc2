/**
 * The CRC-32C that kafkajs's record batches are checksummed with (lib/kafka/crc32c.ts): the same checksums as
 * kafkajs's own byte-at-a-time implementation, and in effect in a process that loads lib/kafka/client.ts.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { crc32c, installedCrc32c, nativeCrc32c } from '../../lib/kafka/crc32c.ts';

const require = createRequire(import.meta.url);
/** kafkajs's own implementation (its module file, which the cache entry for its index.js does not replace). */
const kafkajsCrc32c = require('kafkajs/src/protocol/recordBatch/crc32C/crc32C.js') as (b: Buffer) => number;

describe('crc32c', () => {
  it('gives the standard check value and the empty input 0', () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
    expect(crc32c(Buffer.alloc(0))).toBe(0);
  });

  it("equals kafkajs's own on every length from 0 to 64 and on large inputs, at any offset of a view", () => {
    const data = randomBytes(70_000);
    for (let n = 0; n <= 64; n++)
      expect(crc32c(data.subarray(3, 3 + n)), `length ${n}`).toBe(kafkajsCrc32c(data.subarray(3, 3 + n)));
    for (const n of [1000, 32_487, 65_537])
      expect(crc32c(data.subarray(1, 1 + n))).toBe(kafkajsCrc32c(data.subarray(1, 1 + n)));
    expect(crc32c(Buffer.alloc(4096, 0xff))).toBe(kafkajsCrc32c(Buffer.alloc(4096, 0xff)));
  });

  it("the native one (@node-rs/crc32, loaded on this machine) equals the JS one and kafkajs's, at any offset of a view", () => {
    expect(nativeCrc32c).toBeTypeOf('function');
    expect(installedCrc32c).toBe(nativeCrc32c);
    const native = nativeCrc32c as (b: Uint8Array) => number;
    const data = randomBytes(70_000);
    for (const [from, n] of [
      [0, 0],
      [3, 1],
      [1, 7],
      [5, 64],
      [2, 2_500],
      [1, 32_487],
      [0, 65_537],
    ] as const) {
      const view = data.subarray(from, from + n);
      expect(native(view), `length ${n}`).toBe(crc32c(view));
      expect(native(view), `length ${n}`).toBe(kafkajsCrc32c(view));
    }
    expect(native(Buffer.from('123456789'))).toBe(0xe3069283);
  });

  it('is what kafkajs checksums record batches with in a process that loads lib/kafka/client.ts', () => {
    const script = [
      "await import('./lib/kafka/client.ts');",
      "const { kafkajsUsesFastCrc32c, KAFKAJS_CRC32C_FILE } = await import('./lib/kafka/crc32c.ts');",
      "const { createRequire } = await import('node:module');",
      'const require = createRequire(import.meta.url);',
      "const batchCrc = require('kafkajs/src/protocol/recordBatch/crc32C');",
      "const { installedCrc32c } = await import('./lib/kafka/crc32c.ts');",
      'console.log(JSON.stringify([kafkajsUsesFastCrc32c(), batchCrc === require.cache[KAFKAJS_CRC32C_FILE]?.exports, batchCrc === installedCrc32c, batchCrc(Buffer.from("123456789"))]));',
    ].join('\n');
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: join(import.meta.dirname, '../..'),
      encoding: 'utf8',
    });
    expect(JSON.parse(out)).toEqual([true, true, true, 0xe3069283]);
  });
});

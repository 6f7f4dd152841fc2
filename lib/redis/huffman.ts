/**
 * The static Huffman code of HPACK (RFC 7541, Appendix B), used to store URLs compactly in queue members
 * (member.ts). It was built from a large sample of real HTTP header values, request paths included, so it
 * suits URLs in general: lowercase letters, digits and `-./_%=` take 5 or 6 bits instead of 8. The code is
 * canonical, so it is fully described by each byte's code length; the codes are rebuilt from the lengths
 * at module load. As in HPACK, the last byte is padded with 1 bits (a prefix of the end-of-string code),
 * which no code of 7 bits or fewer consists of, so the decoder knows where the string ends.
 */

/** Code length in bits of each byte value 0..255, and of the end-of-string symbol (256): RFC 7541 Appendix B. */
// biome-ignore format: a table, 16 per row
const LENGTHS = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28,
  28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
  6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6,
  5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,
  13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
  7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,
  15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5,
  6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,
  20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23,
  24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
  22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23,
  21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25,
  19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
  20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23,
  26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
  30,
];

const MAX_LEN = 30;
/** CODES[s]: the code of symbol s, right-aligned in LENGTHS[s] bits. */
const CODES: number[] = new Array(LENGTHS.length).fill(0);
/** Canonical decoding tables per code length: first code, number of codes, index of the first symbol. */
const FIRST = new Array<number>(MAX_LEN + 2).fill(0);
const COUNT = new Array<number>(MAX_LEN + 2).fill(0);
const OFFSET = new Array<number>(MAX_LEN + 2).fill(0);
/** Symbols ordered by (code length, symbol): the canonical order. */
const SORTED: number[] = [];

{
  for (const len of LENGTHS) COUNT[len] = (COUNT[len] ?? 0) + 1;
  let code = 0;
  let index = 0;
  for (let len = 1; len <= MAX_LEN; len++) {
    FIRST[len] = code;
    OFFSET[len] = index;
    for (let s = 0; s < LENGTHS.length; s++) {
      if (LENGTHS[s] !== len) continue;
      CODES[s] = code++;
      SORTED.push(s);
      index++;
    }
    code <<= 1;
  }
}

/** The code of a byte value and its length (exported for tests against RFC 7541's listed codes). */
export function huffmanCode(symbol: number): { code: number; bits: number } {
  return { code: CODES[symbol] as number, bits: LENGTHS[symbol] as number };
}

/** Huffman-encodes bytes; the last byte is padded with 1 bits. */
export function huffmanEncode(input: Uint8Array): Buffer {
  let bitCount = 0;
  for (const b of input) bitCount += LENGTHS[b] as number;
  const out = Buffer.allocUnsafe((bitCount + 7) >> 3);
  let o = 0;
  let acc = 0;
  let bits = 0;
  for (const b of input) {
    const code = CODES[b] as number;
    let len = LENGTHS[b] as number;
    // acc holds fewer than 8 bits here, so adding at most 24 keeps it within 32 bits.
    while (len > 0) {
      const k = Math.min(len, 24);
      acc = ((acc << k) | ((code >>> (len - k)) & ((1 << k) - 1))) >>> 0;
      bits += k;
      len -= k;
      while (bits >= 8) {
        bits -= 8;
        out[o++] = (acc >>> bits) & 0xff;
      }
      acc &= (1 << bits) - 1;
    }
  }
  if (bits > 0) out[o++] = ((acc << (8 - bits)) | ((1 << (8 - bits)) - 1)) & 0xff;
  return out;
}

/** Decodes what {@link huffmanEncode} produced. Throws on input that no encoding produces. */
export function huffmanDecode(input: Uint8Array, from = 0, to = input.length): Buffer {
  const out: number[] = [];
  let code = 0;
  let len = 0;
  let ones = true;
  for (let i = from; i < to; i++) {
    const byte = input[i] as number;
    for (let bit = 7; bit >= 0; bit--) {
      const v = (byte >> bit) & 1;
      code = (code << 1) | v;
      len++;
      ones = ones && v === 1;
      const k = code - (FIRST[len] as number);
      if (k >= 0 && k < (COUNT[len] as number)) {
        const symbol = SORTED[(OFFSET[len] as number) + k] as number;
        if (symbol === 256) throw new Error('huffman: end-of-string symbol inside the data');
        out.push(symbol);
        code = 0;
        len = 0;
        ones = true;
      }
    }
  }
  if (len > 7 || !ones) throw new Error('huffman: bad padding');
  return Buffer.from(out);
}

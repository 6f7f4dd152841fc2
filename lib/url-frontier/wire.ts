/**
 * GetURLs responses encoded straight from uf-serve.lua's packed reply into gRPC frames of `urlfrontier.URLInfo`
 * (lib/url-frontier/urlfrontier.proto): no JS object, string or protobufjs writer per URL. The bytes equal
 * protobufjs's encoding of the same message (test/unit/url-frontier-wire.test.ts checks that), field by field:
 *
 *   1 url      string   tag 0x0a
 *   2 key      string   tag 0x12
 *   3 metadata map<string, StringList>: one entry message per name, tag 0x1a, holding
 *                        1 key (0x0a) and 2 value (0x12) = StringList { 1 values (0x0a), repeated }
 *   4 crawlID  string   tag 0x22
 *
 * Each message is framed as gRPC sends it: a 0 byte (not compressed) and its length as a 4-byte big-endian
 * integer.
 */
import type { Metadata, PackedQueue } from '../redis/url-frontier/model.ts';

const HTTP = Buffer.from('http://');
const HTTPS = Buffer.from('https://');

/** Bytes of `n` as a protobuf varint. */
function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

function writeVarint(buf: Buffer, at: number, n: number): number {
  while (n >= 0x80) {
    buf[at++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  buf[at++] = n;
  return at;
}

/** A length-delimited field: tag, length, bytes. */
function writeBytes(buf: Buffer, at: number, tag: number, bytes: Buffer): number {
  buf[at++] = tag;
  at = writeVarint(buf, at, bytes.length);
  return at + bytes.copy(buf, at);
}

/** Reads `<digits>:` at `at`: the length and where its bytes start. */
function lengthAt(packed: Buffer, at: number): [number, number] {
  let n = 0;
  for (let i = at; i < packed.length; i++) {
    const c = packed[i] as number;
    if (c === 0x3a) {
      if (i === at) break;
      if (i + 1 + n > packed.length) break;
      return [n, i + 1];
    }
    if (c < 0x30 || c > 0x39 || i - at > 9) break;
    n = n * 10 + (c - 0x30);
  }
  throw new Error('uf-serve: malformed reply');
}

/** The encoded map entries of a metadata JSON (field 3 of URLInfo), or an empty Buffer for none. */
function metadataField(json: Buffer): Buffer {
  if (json.length === 0) return Buffer.alloc(0);
  let metadata: Metadata;
  try {
    metadata = JSON.parse(json.toString('utf8')) as Metadata;
  } catch {
    return Buffer.alloc(0); // as the object path reads a corrupt value: no metadata
  }
  const parts: Buffer[] = [];
  for (const [name, values] of Object.entries(metadata)) {
    const valueBufs = (Array.isArray(values) ? values : []).map((v) => Buffer.from(String(v)));
    const listSize = valueBufs.reduce((n, v) => n + 1 + varintSize(v.length) + v.length, 0);
    const nameBuf = Buffer.from(name);
    const entrySize = 1 + varintSize(nameBuf.length) + nameBuf.length + 1 + varintSize(listSize) + listSize;
    const entry = Buffer.allocUnsafe(1 + varintSize(entrySize) + entrySize);
    let at = 0;
    entry[at++] = 0x1a;
    at = writeVarint(entry, at, entrySize);
    at = writeBytes(entry, at, 0x0a, nameBuf);
    entry[at++] = 0x12;
    at = writeVarint(entry, at, listSize);
    for (const v of valueBufs) at = writeBytes(entry, at, 0x0a, v);
    parts.push(entry);
  }
  return Buffer.concat(parts);
}

/**
 * The gRPC frames of every URL of a served queue (one URLInfo message each, in the order served), as one
 * Buffer ready to be written to the stream.
 */
export function encodeServedFrames(queue: PackedQueue): Buffer {
  const { packed } = queue;
  const key = Buffer.from(queue.key);
  const crawl = Buffer.from(queue.crawl);
  // Per URL at most: frame header 5, url tag + varint 6 + "https://" + key + member, key field, crawl field.
  const fixed = 5 + 6 + HTTPS.length + key.length + (1 + varintSize(key.length) + key.length);
  const crawlField = 1 + varintSize(crawl.length) + crawl.length;
  // Metadata is rare: encoded first, so the buffer is sized for it.
  const urls: [number, number, Buffer | undefined][] = [];
  let bound = 0;
  for (let at = 0; at < packed.length; ) {
    const [memberLen, memberAt] = lengthAt(packed, at);
    const [metaLen, metaAt] = lengthAt(packed, memberAt + memberLen);
    const meta = metaLen > 0 ? metadataField(packed.subarray(metaAt, metaAt + metaLen)) : undefined;
    urls.push([memberAt, memberLen, meta]);
    bound += fixed + memberLen + crawlField + (meta?.length ?? 0);
    at = metaAt + metaLen;
  }
  const out = Buffer.allocUnsafe(bound);
  let at = 0;
  for (const [memberAt, memberLen, meta] of urls) {
    // URL bytes: the member with its one-byte code expanded back to `http(s)://<key>` (lib/redis/url-frontier/model.ts urlMember).
    const code = memberLen > 0 ? packed[memberAt] : undefined;
    const scheme = code === 1 ? HTTP : code === 2 ? HTTPS : undefined;
    const skip = code !== undefined && code <= 2 ? 1 : 0;
    const urlLen = (scheme ? scheme.length + key.length : 0) + memberLen - skip;
    const bodyLen =
      1 + varintSize(urlLen) + urlLen + (1 + varintSize(key.length) + key.length) + (meta?.length ?? 0) + crawlField;
    out[at] = 0;
    out.writeUInt32BE(bodyLen, at + 1);
    at += 5;
    out[at++] = 0x0a;
    at = writeVarint(out, at, urlLen);
    if (scheme) {
      at += scheme.copy(out, at);
      at += key.copy(out, at);
    }
    at += packed.copy(out, at, memberAt + skip, memberAt + memberLen);
    at = writeBytes(out, at, 0x12, key);
    if (meta) at += meta.copy(out, at);
    at = writeBytes(out, at, 0x22, crawl);
  }
  return out.subarray(0, at);
}

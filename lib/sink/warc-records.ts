/**
 * The WARC 1.1 records of one page, built and serialized by webrecorder's warcio.js (block and payload digests,
 * `Content-Length`), each gzip-compressed alone (a `.warc.gz` is a series of gzip members, one per record):
 *
 * - a page with a response (any status, success or not): `request` then `response` at the URL the response came
 *   from, then a `metadata` record about it;
 * - a page without one (a fetch error, a robots.txt refusal, a request given up without a response): only the
 *   `metadata` record, at the requested URL, saying why. No response is made up.
 *
 * Record ids are derived from the Kafka record (topic, partition, offset) and the record's role, and dates from the
 * page's timestamp, so the same message always gives the same bytes: a redelivered batch rewrites identical files.
 */
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { WARCRecord, WARCSerializer } from 'warcio';
import { type HeaderList, mediaType, requestHead, responseHead } from './http-block.ts';
import type { BodyBytes, SinkPage } from './page-body.ts';

const WARC_VERSION = 'WARC/1.1';

/** sha-1 in base32, as most WARC tools and indexes (CDX `digest`) write it. */
const DIGEST = { algo: 'sha-1', prefix: 'sha1:', base32: true } as const;

/** Where a Kafka record came from: what makes its WARC records' ids unique and stable. */
export interface RecordSource {
  topic: string;
  partition: number;
  offset: number;
  /** The Kafka record's timestamp (epoch ms): the WARC date of a page whose own timestamp is unusable. */
  timestamp: number;
}

/** One serialized record and what the index and the JSONL need of it. */
export interface BuiltRecord {
  type: 'request' | 'response' | 'metadata' | 'warcinfo';
  bytes: Uint8Array;
  url?: string;
  /** WARC-Date, 14 digits (the CDX timestamp). */
  timestamp14?: string;
  status?: number;
  mime?: string;
  /** The payload digest without its `sha1:` prefix. */
  digest?: string;
}

/** A stable `urn:uuid:` for a name: a name-based (version 5 layout) UUID over its SHA-1. */
function stableRecordId(name: string): string {
  const h = createHash('sha1').update(name).digest();
  h[6] = ((h[6] as number) & 0x0f) | 0x50;
  h[8] = ((h[8] as number) & 0x3f) | 0x80;
  const hex = h.subarray(0, 16).toString('hex');
  return `<urn:uuid:${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}>`;
}

/** The page's time as a WARC date (`YYYY-MM-DDThh:mm:ss.sssZ`): its timestamp (UTC), else the Kafka record's. */
export function warcDate(page: SinkPage, source: RecordSource): string {
  const ts = typeof page.timestamp === 'string' ? page.timestamp : '';
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?$/.test(ts)) {
    const parsed = new Date(`${ts}Z`);
    if (!Number.isNaN(parsed.getTime())) return parsed.toISOString();
  }
  return new Date(source.timestamp).toISOString();
}

function timestamp14(date: string): string {
  return date.replace(/[-:T]/g, '').slice(0, 14);
}

/** RFC 4648 base32 (no padding needed: a SHA-1 is 20 bytes, 32 characters). */
function base32(bytes: Uint8Array): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  return out;
}

function sha1(...parts: (string | Uint8Array)[]): string {
  const hash = createHash('sha1');
  for (const part of parts) hash.update(part);
  return `${DIGEST.prefix}${base32(hash.digest())}`;
}

/**
 * One record as a gzip member. The digests are computed here with node:crypto and set before warcio serializes the
 * record, so warcio sees them present and hashes nothing (its hashers are WebAssembly instances made per record),
 * and the record's bytes are compressed in one synchronous call rather than through a CompressionStream per record
 * (bench/PROFILE.md "Archive sink"). The uncompressed bytes are warcio's own, digests included, in the same header
 * order: the payload digest over the payload, the block digest over the HTTP head (as warcio writes it) and the
 * payload; none on a warcinfo record, as warcio.
 */
async function serialize(record: WARCRecord, payload: Uint8Array = new Uint8Array(0)): Promise<Uint8Array> {
  if (record.warcType !== 'warcinfo') {
    record.warcHeaders.headers.set('WARC-Payload-Digest', sha1(payload));
    const head = record.httpHeaders ? `${record.httpHeaders.toString()}\r\n` : '';
    record.warcHeaders.headers.set('WARC-Block-Digest', sha1(head, payload));
  }
  return gzipSync(await WARCSerializer.serialize(record, { gzip: false, digest: DIGEST }));
}

/** `name: value` lines of an `application/warc-fields` block, one line each. */
function warcFields(fields: [string, string | number | boolean | undefined][]): Uint8Array {
  const lines = fields
    .filter(([, v]) => v !== undefined && v !== '')
    .map(([k, v]) => `${k}: ${String(v).replace(/[\r\n]+/g, ' ')}\r\n`);
  return new TextEncoder().encode(lines.join(''));
}

function responseUrl(page: SinkPage): string {
  return typeof page.response_url === 'string' && page.response_url !== '' ? page.response_url : page.url;
}

/** Whether the page carries a response to record: a status and the headers that came with it. */
function hasResponse(page: SinkPage): boolean {
  if (typeof page.status_code !== 'number') return false;
  // A page given up with only a status code (no headers, no body) says a response happened but not what it was.
  return page.success === true || Object.keys(page.response_headers ?? {}).length > 0;
}

/** The request, response and metadata records of one page (module comment). */
export async function pageRecords(page: SinkPage, body: BodyBytes, source: RecordSource): Promise<BuiltRecord[]> {
  const date = warcDate(page, source);
  const id = (role: string) => stableRecordId(`${source.topic}/${source.partition}/${source.offset}/${role}`);
  const out: BuiltRecord[] = [];
  const responded = hasResponse(page);
  const target = responded ? responseUrl(page) : page.url;
  let responseId: string | undefined;
  if (responded) {
    let parsedUrl: URL | undefined;
    try {
      parsedUrl = new URL(target);
    } catch {
      parsedUrl = undefined;
    }
    const head = responseHead(page, { length: body.bytes.length, reencodedFrom: body.reencodedFrom });
    responseId = id('response');
    const warcHeaders: Record<string, string> = { 'WARC-Record-ID': responseId };
    if (body.truncated) warcHeaders['WARC-Truncated'] = 'length';
    const response = WARCRecord.create(
      {
        url: target,
        date,
        type: 'response',
        warcVersion: WARC_VERSION,
        statusline: head.statusline,
        httpHeaders: head.headers,
        warcHeaders,
      },
      [body.bytes],
    );
    const bytes = await serialize(response, body.bytes);
    out.push({
      type: 'response',
      bytes,
      url: target,
      timestamp14: timestamp14(date),
      status: page.status_code ?? undefined,
      mime: mediaType(head.headers as HeaderList),
      digest: response.warcPayloadDigest?.split(':', 2)[1],
    });
    if (parsedUrl) {
      const req = requestHead(page, parsedUrl);
      const request = WARCRecord.create({
        url: target,
        date,
        type: 'request',
        warcVersion: WARC_VERSION,
        statusline: req.statusline,
        httpHeaders: req.headers,
        warcHeaders: { 'WARC-Record-ID': id('request'), 'WARC-Concurrent-To': responseId },
      });
      out.push({ type: 'request', bytes: await serialize(request) });
    }
  }
  const fields = metadataFields(page, body, source);
  const metadata = WARCRecord.create(
    {
      url: target,
      date,
      type: 'metadata',
      warcVersion: WARC_VERSION,
      warcHeaders: {
        'WARC-Record-ID': id('metadata'),
        ...(responseId ? { 'WARC-Concurrent-To': responseId } : {}),
      },
    },
    [fields],
  );
  out.push({ type: 'metadata', bytes: await serialize(metadata, fields), url: target });
  return out;
}

/** What the page message says beyond the HTTP exchange (docs/outputs.md lists the fields). */
function metadataFields(page: SinkPage, body: BodyBytes, source: RecordSource): Uint8Array {
  const fields: [string, string | number | boolean | undefined][] = [
    ['appid', page.appid],
    ['crawlid', page.crawlid],
    ['spiderid', page.spiderid],
    ['requested-url', page.url],
    ['depth', page.depth],
    ['fetch-time', page.timestamp],
    ['fetched-ms', page.fetched_ms],
    ['retry-times', page.retry_times],
    ['success', page.success],
    ['status-code', typeof page.status_code === 'number' ? page.status_code : undefined],
    ['exception', page.exception],
    ['body-cut', page.body_cut],
    ['body-ref', page.body_ref],
    ['body-ref-missing', body.refMissing ? true : undefined],
    ['body-reencoded-from', body.reencodedFrom],
    ['links-truncated', page.links_truncated],
    ['links-stopped', page.links_stopped],
    ['kafka-source', `${source.topic}/${source.partition}/${source.offset}`],
  ];
  for (const link of Array.isArray(page.links) ? page.links : []) {
    if (link && typeof link.url === 'string') fields.push(['outlink', link.url]);
  }
  return warcFields(fields);
}

/** The `warcinfo` record opening a file: what wrote it, and which crawl it holds. */
export async function warcinfoRecord(filename: string, date: string, isPartOf: string): Promise<BuiltRecord> {
  const record = WARCRecord.create(
    {
      filename,
      date,
      type: 'warcinfo',
      warcVersion: WARC_VERSION,
      warcHeaders: { 'WARC-Record-ID': stableRecordId(`warcinfo/${filename}`) },
    },
    [
      warcFields([
        ['software', 'crawl-cluster (warcio.js)'],
        ['format', 'WARC File Format 1.1'],
        ['conformsTo', 'https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/'],
        ['isPartOf', isPartOf],
      ]),
    ],
  );
  return { type: 'warcinfo', bytes: await serialize(record) };
}

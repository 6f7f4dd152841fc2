/**
 * The sink's WARC records, indexes and JSON lines (lib/sink), read back with warcio.js's own parser: what each page
 * becomes, that the same message gives the same bytes, the rollover, and the layout's idempotence on redelivery.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLog } from '../../lib/ports.ts';
import { groupFolder, segment } from '../../lib/sink/layout.ts';
import { fileOutput } from '../../lib/sink/output.ts';
import { bodyReader } from '../../lib/sink/page-body.ts';
import { parseFormats, type SinkOptions, sinkBatch } from '../../lib/sink/sink.ts';
import { pageRecords } from '../../lib/sink/warc-records.ts';
import { filesUnder, pageRecord, readJsonl, readWarc, samplePage } from '../helpers/warc.ts';

/** Text that does not compress: `n` seeds it. */
function noise(n: number, length: number): string {
  let out = '';
  for (let i = 0; out.length < length; i += 1) out += createHash('sha256').update(`${n}/${i}`).digest('hex');
  return out.slice(0, length);
}

const SOURCE = { topic: 'demo.crawled_firehose', partition: 0, offset: 7, timestamp: 0 };
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sink-'));
  dirs.push(dir);
  return dir;
}

async function recordsOf(page: ReturnType<typeof samplePage>) {
  const built = await pageRecords(page, { bytes: Buffer.from(page.body), truncated: false }, SOURCE);
  return { built, read: await readWarc(Buffer.concat(built.map((r) => r.bytes))) };
}

function options(dir: string, overrides: Partial<SinkOptions> = {}): SinkOptions {
  return {
    formats: parseFormats('warc,jsonl'),
    output: fileOutput(dir),
    bodies: bodyReader(),
    warcMaxBytes: 1 << 30,
    log: silentLog,
    ...overrides,
  };
}

describe('page records', () => {
  it('a fetched page is a response, a request and a metadata record with digests the parser accepts', async () => {
    const { read } = await recordsOf(samplePage(1));
    expect(read.map((r) => r.type)).toEqual(['response', 'request', 'metadata']);
    const [response, request, metadata] = read;
    expect(response?.url).toBe('http://site.test/page/1');
    expect(response?.statusline).toBe('HTTP/1.1 200 OK');
    expect(response?.content.toString()).toBe('<html><body>page 1</body></html>');
    expect(response?.warcHeaders.get('WARC-Payload-Digest')).toMatch(/^sha1:[A-Z2-7]{32}$/);
    expect(response?.warcHeaders.get('WARC-Block-Digest')).toMatch(/^sha1:[A-Z2-7]{32}$/);
    expect(request?.statusline).toBe('GET /page/1 HTTP/1.1');
    expect(request?.httpHeaders).toContainEqual(['Host', 'site.test']);
    expect(request?.warcHeaders.get('WARC-Concurrent-To')).toBe(response?.warcHeaders.get('WARC-Record-ID'));
    const fields = metadata?.content.toString() ?? '';
    expect(fields).toContain('crawlid: c1\r\n');
    expect(fields).toContain('depth: 1\r\n');
    expect(fields).toContain('outlink: http://site.test/page/2\r\n');
    expect(fields).toContain('fetch-time: 2026-11-22T10:00:00.000\r\n');
  });

  it('each record is one gzip member whose block and payload digests are the SHA-1 of its bytes, in base32', async () => {
    const page = samplePage(3, { body: noise(3, 5000), response_headers: { 'Content-Type': ['text/plain'] } });
    const { built } = await recordsOf(page);
    const base32 = (bytes: Buffer) => {
      const bits = [...bytes].map((b) => b.toString(2).padStart(8, '0')).join('');
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
      return (bits.match(/.{1,5}/g) ?? []).map((five) => alphabet[Number.parseInt(five.padEnd(5, '0'), 2)]).join('');
    };
    const sha1 = (bytes: Buffer) => `sha1:${base32(createHash('sha1').update(bytes).digest())}`;
    const crlf2 = Buffer.from('\r\n\r\n');
    for (const record of built) {
      const raw = gunzipSync(record.bytes);
      // One member: gunzip of the whole is the record alone, ending as a record ends.
      expect(raw.subarray(-4).equals(crlf2)).toBe(true);
      const headEnd = raw.indexOf(crlf2);
      const head = raw.subarray(0, headEnd).toString('utf8');
      const header = (name: string) => new RegExp(`^${name}: (.*)$`, 'm').exec(head)?.[1]?.trim();
      const block = raw.subarray(headEnd + 4, headEnd + 4 + Number(header('Content-Length')));
      expect(headEnd + 4 + block.length + 4, record.type).toBe(raw.length);
      const payload = record.type === 'metadata' ? block : block.subarray(block.indexOf(crlf2) + 4);
      expect(header('WARC-Block-Digest'), record.type).toBe(sha1(block));
      expect(header('WARC-Payload-Digest'), record.type).toBe(sha1(payload));
      if (record.type === 'response') {
        expect(payload.toString('utf8')).toBe(page.body);
        expect(record.digest).toBe(sha1(payload).slice('sha1:'.length));
      }
    }
  });

  it('a decoded body drops its content and transfer codings to X-Crawl-Orig-* and states its own length', async () => {
    const page = samplePage(2, {
      response_headers: {
        'Content-Type': ['text/html'],
        'Content-Encoding': ['gzip'],
        'Transfer-Encoding': ['chunked'],
        'Content-Length': ['5'],
      },
    });
    const { read } = await recordsOf(page);
    const headers = read[0]?.httpHeaders ?? [];
    expect(headers.map(([n]) => n.toLowerCase())).not.toContain('content-encoding');
    expect(headers.map(([n]) => n.toLowerCase())).not.toContain('transfer-encoding');
    expect(headers).toContainEqual(['X-Crawl-Orig-Content-Encoding', 'gzip']);
    expect(headers).toContainEqual(['X-Crawl-Orig-Content-Length', '5']);
    expect(headers).toContainEqual(['Content-Length', String(Buffer.byteLength(page.body))]);
  });

  it('the same message gives the same bytes (ids and dates come from the record)', async () => {
    const a = await recordsOf(samplePage(3));
    const b = await recordsOf(samplePage(3));
    expect(Buffer.concat(a.built.map((r) => r.bytes)).equals(Buffer.concat(b.built.map((r) => r.bytes)))).toBe(true);
  });

  it('a page without a response is one metadata record at the requested URL, with the reason', async () => {
    const page = samplePage(4, {
      success: false,
      status_code: null,
      status_msg: '',
      response_headers: {},
      request_headers: {},
      body: '',
      exception: 'robots.txt disallows this URL',
    });
    const { read } = await recordsOf(page);
    expect(read.map((r) => r.type)).toEqual(['metadata']);
    expect(read[0]?.url).toBe(page.url);
    expect(read[0]?.content.toString()).toContain('exception: robots.txt disallows this URL\r\n');
    expect(read[0]?.content.toString()).toContain('success: false\r\n');
  });

  it('a redirected page is recorded at the URL that answered, the requested one in its metadata', async () => {
    const page = samplePage(5, { response_url: 'http://site.test/moved/5' });
    const { read } = await recordsOf(page);
    expect(read.map((r) => r.url)).toEqual([
      'http://site.test/moved/5',
      'http://site.test/moved/5',
      'http://site.test/moved/5',
    ]);
    expect(read[2]?.content.toString()).toContain('requested-url: http://site.test/page/5\r\n');
  });

  it('a cut body is marked WARC-Truncated: length', async () => {
    const page = samplePage(6, { body_truncated: true, body_cut: 'max_body_bytes', body_cut_bytes: 10 });
    const built = await pageRecords(page, { bytes: Buffer.from('0123456789'), truncated: true }, SOURCE);
    const read = await readWarc(Buffer.concat(built.map((r) => r.bytes)));
    expect(read[0]?.warcHeaders.get('WARC-Truncated')).toBe('length');
    expect(read[0]?.content.toString()).toBe('0123456789');
  });
});

describe('page bodies', () => {
  it('base64 bodies are written as their bytes', async () => {
    const bytes = Buffer.from([0, 1, 2, 250, 251, 255]);
    const page = samplePage(7, { body: bytes.toString('base64'), body_encoding: 'base64', encoding: 'latin-1' });
    const dir = tempDir();
    await sinkBatch([pageRecord(page, 0)], options(dir));
    const warc = filesUnder(dir).find((f) => f.endsWith('.warc.gz')) as string;
    const read = await readWarc(readFileSync(join(dir, warc)));
    expect(read[1]?.content.equals(bytes)).toBe(true);
  });

  it('text in a charset without an encoder here is written as UTF-8, and its Content-Type says so', async () => {
    const page = samplePage(8, {
      body: 'price: 5 €',
      encoding: 'windows-1252',
      response_headers: { 'Content-Type': ['text/html; charset=windows-1252'] },
    });
    const dir = tempDir();
    await sinkBatch([pageRecord(page, 0)], options(dir));
    const warc = filesUnder(dir).find((f) => f.endsWith('.warc.gz')) as string;
    const response = (await readWarc(readFileSync(join(dir, warc))))[1];
    expect(response?.content.toString('utf8')).toBe('price: 5 €');
    expect(response?.httpHeaders).toContainEqual(['Content-Type', 'text/html; charset=utf-8']);
  });

  it('a body_ref body is read whole from the store; a missing one leaves the message part, truncated', async () => {
    const dir = tempDir();
    const stored = join(dir, 'whole.bin');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(stored, 'the whole body, longer than the message part');
    const withRef = samplePage(9, {
      body: 'the whole',
      body_truncated: true,
      body_message_cut: true,
      body_ref: `file://${stored}`,
    });
    const gone = samplePage(10, {
      body: 'first part',
      body_truncated: true,
      body_message_cut: true,
      body_ref: `file://${dir}/gone.bin`,
    });
    const out = join(dir, 'out');
    await sinkBatch([pageRecord(withRef, 0), pageRecord(gone, 1)], options(out));
    const warc = filesUnder(out).find((f) => f.endsWith('.warc.gz')) as string;
    const responses = (await readWarc(readFileSync(join(out, warc)))).filter((r) => r.type === 'response');
    expect(responses[0]?.content.toString()).toBe('the whole body, longer than the message part');
    expect(responses[0]?.warcHeaders.has('WARC-Truncated')).toBe(false);
    expect(responses[1]?.content.toString()).toBe('first part');
    expect(responses[1]?.warcHeaders.get('WARC-Truncated')).toBe('length');
  });
});

describe('files', () => {
  it('lays a group out by appid, crawlid and day, names escaped so they add or climb no level', () => {
    expect(groupFolder('app', 'c1', '2026-11-22T10:00:00.000Z')).toBe('app/c1/2026/11/22/');
    expect(segment('a/b')).toBe('a%2Fb');
    expect(segment('..')).toBe('%2E%2E');
  });

  it('rolls over before a page that would pass the limit; every file opens with warcinfo, its index points at responses', async () => {
    const dir = tempDir();
    const pages = Array.from({ length: 12 }, (_, i) =>
      pageRecord(samplePage(i, { body: noise(i, 1000 + i) }), 100 + i),
    );
    const result = await sinkBatch(pages, options(dir, { warcMaxBytes: 65_536 / 16 }));
    expect(result.failures).toEqual([]);
    const warcs = filesUnder(dir).filter((f) => f.endsWith('.warc.gz'));
    expect(warcs.length).toBeGreaterThan(2);
    const urls: string[] = [];
    for (const file of warcs) {
      const bytes = readFileSync(join(dir, file));
      expect(bytes.length).toBeLessThanOrEqual(65_536 / 16);
      const records = await readWarc(bytes);
      expect(records[0]?.type).toBe('warcinfo');
      expect(records[0]?.warcHeaders.get('WARC-Filename')).toBe(file.split('/').pop());
      const cdxj = readFileSync(join(dir, file.replace(/\.warc\.gz$/, '.cdxj')), 'utf8')
        .trim()
        .split('\n');
      for (const line of cdxj) {
        const fields = JSON.parse(line.slice(line.indexOf('{'))) as { offset: string; url: string; status: string };
        const at = records.find((r) => r.offset === Number(fields.offset));
        expect(at?.type).toBe('response');
        expect(at?.url).toBe(fields.url);
        expect(fields.status).toBe('200');
      }
      expect([...cdxj].sort()).toEqual(cdxj);
      urls.push(...records.filter((r) => r.type === 'response').map((r) => r.url as string));
    }
    expect(urls).toEqual(pages.map((_, i) => `http://site.test/page/${i}`));
  });

  it('JSON lines carry the page without its body and the location of its response record', async () => {
    const dir = tempDir();
    await sinkBatch([pageRecord(samplePage(1), 40), pageRecord(samplePage(2), 41)], options(dir));
    const files = filesUnder(dir);
    const jsonl = files.find((f) => f.endsWith('.jsonl.gz')) as string;
    expect(jsonl).toBe('app/c1/2026/11/22/demo.crawled_firehose-0-000000000040.jsonl.gz');
    const lines = readJsonl(join(dir, jsonl));
    expect(lines.map((l) => l.url)).toEqual(['http://site.test/page/1', 'http://site.test/page/2']);
    expect(lines[0]).not.toHaveProperty('body');
    const warc = lines[1]?.warc as { filename: string; offset: number; length: number };
    const bytes = readFileSync(join(dir, 'app/c1/2026/11/22', warc.filename)).subarray(
      warc.offset,
      warc.offset + warc.length,
    );
    const [record] = await readWarc(bytes);
    expect(record?.type).toBe('response');
    expect(record?.content.toString()).toBe(samplePage(2).body);
  });

  it('JSONL alone keeps each message as it came', async () => {
    const dir = tempDir();
    const record = pageRecord(samplePage(3), 5);
    await sinkBatch([record], options(dir, { formats: parseFormats('jsonl') }));
    expect(filesUnder(dir)).toEqual(['app/c1/2026/11/22/demo.crawled_firehose-0-000000000005.jsonl.gz']);
    expect(readJsonl(join(dir, filesUnder(dir)[0] as string))).toEqual([JSON.parse(record.value.toString())]);
  });

  it('a shorter redelivery of a batch rewrites its files and removes what the longer one wrote beyond them: each page once', async () => {
    const dir = tempDir();
    const all = Array.from({ length: 10 }, (_, i) => pageRecord(samplePage(i, { body: noise(i, 3000) }), 200 + i));
    const small = options(dir, { warcMaxBytes: 8192 });
    await sinkBatch(all, small);
    const first = filesUnder(dir).filter((f) => f.endsWith('.warc.gz'));
    expect(first.length).toBeGreaterThan(3);
    // The same batch delivered again from its first offset, shorter; then the rest as the next batch.
    await sinkBatch(all.slice(0, 4), small);
    expect(filesUnder(dir).filter((f) => f.endsWith('.warc.gz')).length).toBeLessThan(first.length);
    await sinkBatch(all.slice(4), small);
    const seen: string[] = [];
    for (const file of filesUnder(dir).filter((f) => f.endsWith('.warc.gz'))) {
      const records = await readWarc(readFileSync(join(dir, file)));
      seen.push(...records.filter((r) => r.type === 'response').map((r) => r.url as string));
    }
    expect(seen.sort()).toEqual(all.map((_, i) => `http://site.test/page/${i}`).sort());
    const lines = filesUnder(dir)
      .filter((f) => f.endsWith('.jsonl.gz'))
      .flatMap((f) => readJsonl(join(dir, f)).map((l) => l.url));
    expect(lines.sort()).toEqual(seen);
  });

  it('large stored bodies are written a file at a time: a closed WARC file is out before more bodies are read', async () => {
    const dir = tempDir();
    const output = fileOutput(dir);
    const events: string[] = [];
    // Ten pages whose stored bodies do not compress (2 MB each): with files of at most 5 MB, two pages a file.
    const bodies: SinkOptions['bodies'] = {
      async read(ref) {
        events.push(`read ${ref}`);
        return randomBytes(2_000_000);
      },
    };
    const recording: SinkOptions['output'] = {
      ...output,
      async put(key, chunks, type) {
        if (key.endsWith('.warc.gz')) events.push(`put ${key.split('/').pop()}`);
        return output.put(key, chunks, type);
      },
    };
    const records = Array.from({ length: 10 }, (_, i) =>
      pageRecord(samplePage(i, { body: '', body_ref: `mem://body/${i}` }), 100 + i),
    );
    const result = await sinkBatch(
      records,
      options(dir, { formats: parseFormats('warc'), output: recording, bodies, warcMaxBytes: 5_000_000 }),
    );
    expect(result).toMatchObject({ pages: 10, failures: [] });
    const puts = events.filter((e) => e.startsWith('put'));
    expect(puts).toHaveLength(5);
    // Each file is written before the body of the page that did not fit in it is read, and no later than that: at
    // most one file's pages (and the next page's body) are held at once.
    for (const [k, put] of puts.entries()) {
      const at = events.indexOf(put);
      if (k < puts.length - 1) expect(events.slice(0, at).filter((e) => e.startsWith('read'))).toHaveLength(2 * k + 3);
    }
    // The files read back whole: every page once, its body as stored.
    const warcs = filesUnder(dir).filter((f) => f.endsWith('.warc.gz'));
    const read = (await Promise.all(warcs.map(async (f) => readWarc(readFileSync(join(dir, f)))))).flat();
    const responses = read.filter((r) => r.type === 'response');
    expect(responses.map((r) => r.url).sort()).toEqual(records.map((_, i) => `http://site.test/page/${i}`).sort());
  });

  it('a record that is not a page is skipped, and the batch goes on', async () => {
    const dir = tempDir();
    const bad = { ...pageRecord(samplePage(0), 0), value: Buffer.from('not json') };
    const result = await sinkBatch([bad, pageRecord(samplePage(1), 1)], options(dir));
    expect(result).toMatchObject({ pages: 1, skipped: 1, failures: [] });
  });

  it('a partition whose output cannot be written fails from its first record; the others are written', async () => {
    const dir = tempDir();
    const output = fileOutput(dir);
    const failing: SinkOptions['output'] = {
      ...output,
      async put(key, chunks, type) {
        if (key.includes('-1-')) throw new Error('disk full');
        return output.put(key, chunks, type);
      },
    };
    const records = [
      pageRecord(samplePage(1), 10, 0),
      pageRecord(samplePage(2), 20, 1),
      pageRecord(samplePage(3), 21, 1),
    ];
    const result = await sinkBatch(records, options(dir, { output: failing }));
    expect(result.failures.map((r) => [r.partition, r.offset])).toEqual([[1, 20]]);
    expect(result.pages).toBe(1);
  });
});

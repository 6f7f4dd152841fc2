/**
 * Reading the sink's output back in tests: WARC files through warcio.js's own parser (offsets of each gzip member
 * included), JSON lines through gunzip, and sample page messages; and a page as the fixture site serves it, to hold
 * an archived body against.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { get } from 'node:http';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { WARCParser } from 'warcio';
import type { PageItem } from '../../lib/crawl/types.ts';
import type { DecodedRecord } from '../../lib/kafka/record.ts';
import type { FixtureSite } from '../../localstack/site/site.ts';

export interface ReadRecord {
  type: string;
  url: string | undefined;
  offset: number;
  warcHeaders: Map<string, string>;
  statusline: string | undefined;
  httpHeaders: [string, string][];
  /** The record's content: the HTTP payload of request/response records, else the whole block. */
  content: Buffer;
}

/** Every record of a (gzip-member) WARC file, in order. */
export async function readWarc(bytes: Uint8Array): Promise<ReadRecord[]> {
  const parser = new WARCParser([bytes], { keepHeadersCase: true });
  const out: ReadRecord[] = [];
  for await (const record of parser) {
    const offset = parser.offset;
    const content = Buffer.from(await record.readFully(true));
    out.push({
      type: record.warcType ?? '',
      url: record.warcTargetURI ?? undefined,
      offset,
      warcHeaders: new Map([...record.warcHeaders.headers]),
      statusline: record.httpHeaders?.statusline,
      httpHeaders: record.httpHeaders ? [...record.httpHeaders.headers] : [],
      content,
    });
  }
  return out;
}

/** Every file under `dir` (recursively), as paths relative to it, sorted. */
export function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
    .sort();
}

/** The JSON lines of a `.jsonl.gz` file. */
export function readJsonl(path: string): Record<string, unknown>[] {
  return gunzipSync(readFileSync(path))
    .toString('utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** What the site serves at `url` (its host names are the crawler's host map's: asked on loopback with that Host). */
export function fromSite(site: FixtureSite, url: string): Promise<string> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port: site.port, path: u.pathname, headers: { Host: u.host } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => {
        text += d;
      });
      res.on('end', () => resolve(text)).on('error', reject);
    }).on('error', reject);
  });
}

/** A successful page message of the fixture shape (docs/contract.md "Pages"), `overrides` on top. */
export function samplePage(n: number, overrides: Partial<PageItem> = {}): PageItem {
  const url = `http://site.test/page/${n}`;
  return {
    appid: 'app',
    crawlid: 'c1',
    spiderid: 'link',
    url,
    response_url: url,
    status_code: 200,
    status_msg: 'OK',
    response_headers: { 'Content-Type': ['text/html; charset=utf-8'] },
    request_headers: { 'User-Agent': ['crawl-cluster-test'] },
    body: `<html><body>page ${n}</body></html>`,
    encoding: 'utf-8',
    links: [{ url: `http://site.test/page/${n + 1}`, text: 'next' }],
    attrs: null,
    success: true,
    timestamp: '2026-11-22T10:00:00.000',
    depth: 1,
    fetched_ms: 12,
    retry_times: 0,
    ...overrides,
  };
}

/** The Kafka record carrying `page` at `offset` of partition `partition`. */
export function pageRecord(
  page: PageItem,
  offset: number,
  partition = 0,
  topic = 'demo.crawled_firehose',
): DecodedRecord {
  return {
    topic,
    partition,
    offset,
    timestamp: 1_795_000_000_000,
    value: Buffer.from(JSON.stringify(page)),
    headers: {},
  };
}

/**
 * The sink (docs/outputs.md): a batch of `<p>.crawled_firehose` records written as WARC files with their CDXJ indexes
 * and as JSON lines, under the layout of lib/sink/layout.ts. It is the MSK-triggered function's behaviour
 * (functions/sink) and the local runtime's.
 *
 * Idempotent by construction: the objects' names come from the partition and the offset of each group's first
 * record, their bytes from the records alone (lib/sink/warc-records.ts), and a partition whose writing fails is
 * reported failed from its first record, so it comes again whole and rewrites the same objects.
 */
import { gzipSync } from 'node:zlib';
import type { DecodedRecord } from '../kafka/record.ts';
import type { Log } from '../ports.ts';
import { basename, cdxjKey, groupFolder, groupStem, jsonlKey, partsPrefix, warcKey } from './layout.ts';
import type { SinkOutput } from './output.ts';
import { type BodyReader, bodyBytes, parsePage, type SinkPage } from './page-body.ts';
import { type WarcLocation, type WarcPart, WarcParts } from './warc-parts.ts';
import { pageRecords, type RecordSource, warcDate } from './warc-records.ts';

export type SinkFormat = 'warc' | 'jsonl';

/** `SINK_FORMATS` (`warc`, `jsonl`, `warc,jsonl`; empty: none) as a set; an unknown name is an error. */
export function parseFormats(value: string): ReadonlySet<SinkFormat> {
  const out = new Set<SinkFormat>();
  for (const raw of value.split(',')) {
    const name = raw.trim().toLowerCase();
    if (name === '' || name === 'none') continue;
    if (name !== 'warc' && name !== 'jsonl') throw new Error(`SINK_FORMATS: unknown format ${JSON.stringify(raw)}`);
    out.add(name);
  }
  return out;
}

export interface SinkOptions {
  formats: ReadonlySet<SinkFormat>;
  output: SinkOutput;
  /** Reads bodies by `body_ref` (lib/sink/page-body.ts `bodyReader`). */
  bodies: BodyReader;
  /** A WARC file is closed before a page that would take it past this many bytes (`SINK_WARC_MAX_BYTES`). */
  warcMaxBytes: number;
  log: Log;
}

/** What one batch did. */
export interface SinkResult {
  /** Pages written (in each format asked for). */
  pages: number;
  /** Records that are not page messages: skipped (logged), never retried. */
  skipped: number;
  /** Objects written. */
  objects: number;
  /** Bytes written, per format. */
  bytes: Record<SinkFormat, number>;
  /** The first record of each partition whose output could not be written: redeliver from there. */
  failures: DecodedRecord[];
}

interface GroupPage {
  page: SinkPage;
  record: DecodedRecord;
  date: string;
}

interface Group {
  stem: string;
  isPartOf: string;
  pages: GroupPage[];
}

/** Writes a batch (module comment). Partitions are written one after the other; a failed one does not stop the rest. */
export async function sinkBatch(records: readonly DecodedRecord[], options: SinkOptions): Promise<SinkResult> {
  const result: SinkResult = { pages: 0, skipped: 0, objects: 0, bytes: { warc: 0, jsonl: 0 }, failures: [] };
  if (options.formats.size === 0) return result;
  const byPartition = new Map<string, DecodedRecord[]>();
  for (const r of records) {
    const key = `${r.topic}\u0000${r.partition}`;
    const list = byPartition.get(key) ?? [];
    list.push(r);
    byPartition.set(key, list);
  }
  for (const list of byPartition.values()) {
    list.sort((a, b) => a.offset - b.offset);
    const groups = new Map<string, Group>();
    for (const record of list) {
      const page = parsePage(record.value);
      if (!page) {
        result.skipped += 1;
        options.log.warn('sink: a record that is not a page message was skipped', {
          topic: record.topic,
          partition: record.partition,
          offset: record.offset,
        });
        continue;
      }
      const date = warcDate(page, record);
      const folder = groupFolder(page.appid, page.crawlid, date);
      let group = groups.get(folder);
      if (!group) {
        group = {
          stem: groupStem(folder, record.topic, record.partition, record.offset),
          isPartOf: `${page.appid}/${page.crawlid}`,
          pages: [],
        };
        groups.set(folder, group);
      }
      group.pages.push({ page, record, date });
    }
    try {
      for (const group of groups.values()) {
        const written = await writeGroup(group, options, result);
        result.pages += written;
      }
    } catch (error) {
      const first = list[0] as DecodedRecord;
      result.failures.push(first);
      options.log.error('sink: writing failed; the partition will be delivered again from its first record', {
        topic: first.topic,
        partition: first.partition,
        offset: first.offset,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }
  return result;
}

async function writeGroup(group: Group, options: SinkOptions, result: SinkResult): Promise<number> {
  const { output, formats } = options;
  const warc = formats.has('warc');
  const locations: WarcLocation[] = [];
  const written = new Set<string>();
  if (warc) {
    // Each file is written as soon as it is closed, so the group holds one file at a time (at most
    // SINK_WARC_MAX_BYTES, besides one page's body): a batch of large stored bodies does not hold them all.
    const writePart = async (part: WarcPart) => {
      const key = warcKey(group.stem, part.n);
      await output.put(key, part.chunks, 'application/warc');
      written.add(key);
      result.bytes.warc += part.bytes;
      const index = cdxjKey(group.stem, part.n);
      await output.put(index, [Buffer.from(part.cdxj)], 'application/x-cdxj');
      written.add(index);
      result.objects += 2;
    };
    const parts = new WarcParts((n) => basename(warcKey(group.stem, n)), options.warcMaxBytes, group.isPartOf);
    for (const { page, record, date } of group.pages) {
      const body = await bodyBytes(page, options.bodies);
      locations.push(await parts.add(await pageRecords(page, body, sourceOf(record)), date));
      for (const part of parts.takeClosed()) await writePart(part);
    }
    for (const part of parts.finish()) await writePart(part);
  }
  if (formats.has('jsonl')) {
    const lines = group.pages.map(({ page, record }, i) => jsonLine(page, record, warc ? locations[i] : undefined));
    const gz = gzipSync(Buffer.from(lines.join('')));
    await output.put(jsonlKey(group.stem), [gz], 'application/gzip');
    result.bytes.jsonl += gz.length;
    result.objects += 1;
  }
  if (warc) {
    // What an earlier, longer delivery of this batch wrote beyond these files (layout.ts).
    const stale = (await output.list(partsPrefix(group.stem))).filter((key) => !written.has(key));
    if (stale.length > 0) await output.remove(stale);
  }
  return group.pages.length;
}

function sourceOf(record: DecodedRecord): RecordSource {
  return { topic: record.topic, partition: record.partition, offset: record.offset, timestamp: record.timestamp };
}

/**
 * One JSON line: the page message as it came, or, with WARC on, the message without its body and with `warc`, where
 * the body is: the file (beside the JSONL file), the offset and length of its response record's gzip member (of its
 * metadata record for a page without a response).
 */
function jsonLine(page: SinkPage, record: DecodedRecord, location: WarcLocation | undefined): string {
  if (!location) {
    const raw = record.value.toString('utf8').trim();
    return `${raw.includes('\n') ? JSON.stringify(page) : raw}\n`;
  }
  const { body: _body, ...rest } = page;
  return `${JSON.stringify({ ...rest, warc: location })}\n`;
}

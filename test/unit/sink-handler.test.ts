import { afterEach, describe, expect, it } from 'vitest';

// Ahead of the handler module: its Powertools logger and metrics read the environment at import.
import '../helpers/silent-powertools.ts';

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeMskEvent, type MskBatchResponse } from '../../functions/shared/msk.ts';
import { sinkHandler } from '../../functions/sink/handler.ts';
import { silentLog } from '../../lib/ports.ts';
import { fileOutput, type SinkOutput } from '../../lib/sink/output.ts';
import { bodyReader } from '../../lib/sink/page-body.ts';
import { parseFormats, type SinkOptions } from '../../lib/sink/sink.ts';
import { lambdaContext } from '../helpers/events.ts';
import { filesUnder, pageRecord, readJsonl, samplePage } from '../helpers/warc.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function invoke(output: SinkOutput, records: ReturnType<typeof pageRecord>[]): Promise<MskBatchResponse> {
  const options: SinkOptions = {
    formats: parseFormats('warc,jsonl'),
    output,
    bodies: bodyReader(),
    warcMaxBytes: 1 << 30,
    log: silentLog,
  };
  const event = encodeMskEvent(records);
  return sinkHandler(() => Promise.resolve(options))(event, lambdaContext('sink'));
}

describe('sink handler', () => {
  it('writes the pages of an MSK event and answers no failures', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sink-handler-'));
    dirs.push(dir);
    const response = await invoke(fileOutput(dir), [pageRecord(samplePage(1), 3, 0), pageRecord(samplePage(2), 9, 1)]);
    expect(response.batchItemFailures).toEqual([]);
    const jsonl = filesUnder(dir).filter((f) => f.endsWith('.jsonl.gz'));
    expect(jsonl).toEqual([
      'app/c1/2026/11/22/demo.crawled_firehose-0-000000000003.jsonl.gz',
      'app/c1/2026/11/22/demo.crawled_firehose-1-000000000009.jsonl.gz',
    ]);
    expect(readJsonl(join(dir, jsonl[1] as string)).map((l) => l.url)).toEqual(['http://site.test/page/2']);
  });

  it('names the first record of a partition it could not write, so Lambda retries that partition whole', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sink-handler-'));
    dirs.push(dir);
    const files = fileOutput(dir);
    const broken: SinkOutput = {
      ...files,
      put: (key, chunks, type) =>
        key.includes('firehose-1-') ? Promise.reject(new Error('S3 unavailable')) : files.put(key, chunks, type),
    };
    const response = await invoke(broken, [
      pageRecord(samplePage(1), 3, 0),
      pageRecord(samplePage(2), 9, 1),
      pageRecord(samplePage(3), 10, 1),
    ]);
    expect(response.batchItemFailures).toEqual([
      { itemIdentifier: { partition: 'demo.crawled_firehose-1', offset: 9 } },
    ]);
  });
});

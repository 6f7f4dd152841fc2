/**
 * `crawl-cluster crawl URL --warc FILE` as a user runs it: the real CLI in a child process against a local cluster
 * crawling the fixture site; the file is read back with warcio.js and checked by Python warcio, which nobody here wrote.
 */
import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { WARCParser } from 'warcio';
import { cliCluster, runCli } from '../helpers/cli.ts';
import { fromSite } from '../helpers/warc.ts';
import { warcToolsBin } from '../helpers/warc-tools.ts';

const APPID = 'cli-warc';

describe('crawl-cluster crawl --warc against a running cluster with one crawler worker', () => {
  const c = cliCluster('cli-warc-');

  const urlsOf = (pages: Set<number>) => [...pages].map((n) => c.site.url(n)).sort();

  it('--warc writes the crawl as one WARC file: one response per page with the body the site served, valid for warcio', async () => {
    const warc = join(c.dir, 'crawl.warc.gz');
    const expected = urlsOf(c.site.reachable(20, 1));

    const run = await runCli(
      ['crawl', c.site.url(20), '--depth', '1', '--appid', APPID, '--crawlid', 'warc1', '--warc', warc, '--json'],
      c.env,
    );

    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'complete', pages: expected.length, warc });
    // Read back with warcio.js: a warcinfo first, then per page its request, response and metadata.
    const records: { type: string; url?: string; body: string; concurrentTo?: string; id?: string }[] = [];
    const parser = new WARCParser(Readable.from([await readFile(warc)]));
    for await (const record of parser) {
      await record.readFully(false);
      records.push({
        type: record.warcType as string,
        url: record.warcTargetURI ?? undefined,
        body: record.warcType === 'response' ? Buffer.from(record.payload ?? []).toString('utf8') : '',
        concurrentTo: record.warcHeader('WARC-Concurrent-To') ?? undefined,
        id: record.warcHeader('WARC-Record-ID') ?? undefined,
      });
    }
    expect(records[0]?.type).toBe('warcinfo');
    expect(records.filter((r) => r.type === 'warcinfo')).toHaveLength(1);
    const responses = records.filter((r) => r.type === 'response');
    expect(responses.map((r) => r.url as string).sort()).toEqual(expected);
    expect(records.filter((r) => r.type === 'request')).toHaveLength(expected.length);
    expect(records.filter((r) => r.type === 'metadata')).toHaveLength(expected.length);
    const seed = responses.find((r) => r.url === c.site.url(20));
    expect(seed?.body).toBe(await fromSite(c.site, c.site.url(20)));
    const ids = new Set(responses.map((r) => r.id));
    for (const r of records.filter((x) => x.type === 'request')) expect(ids.has(r.concurrentTo)).toBe(true);
    // Python warcio, which nobody here wrote, agrees: the digests check and the index lists one response per page.
    const bin = warcToolsBin();
    const check = spawnSync(join(bin, 'warcio'), ['check', warc], { encoding: 'utf8' });
    expect(check.status, `${check.stdout}${check.stderr}`).toBe(0);
    const index = spawnSync(join(bin, 'warcio'), ['index', '-f', 'warc-type,warc-target-uri', warc], {
      encoding: 'utf8',
    });
    const indexed = index.stdout
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, string>)
      .filter((e) => e['warc-type'] === 'response')
      .map((e) => e['warc-target-uri']);
    expect(indexed.sort()).toEqual(expected);
  }, 300_000);
});

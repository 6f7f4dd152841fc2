/**
 * The benchmarks run themselves on the crawler image's Node (bench/lib/runtime.ts): an entry point started on another
 * Node starts again on CRAWLER_NODE, with its arguments, and exits with that run's code; on CRAWLER_NODE already, or
 * without it, it goes on in place.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const REPO_ROOT = join(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'bench-runtime-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** An entry point that calls onCrawlerNode, then says where it went on. */
const entry = join(dir, 'entry.mjs');
writeFileSync(
  entry,
  `const { onCrawlerNode } = await import(${JSON.stringify(join(REPO_ROOT, 'bench/lib/runtime.ts'))});\n` +
    'onCrawlerNode();\nconsole.log(JSON.stringify({ inPlace: true, args: process.argv.slice(2) }));\n',
);

function run(crawlerNode: string | undefined) {
  const env = { ...process.env };
  if (crawlerNode === undefined) delete env.CRAWLER_NODE;
  else env.CRAWLER_NODE = crawlerNode;
  return spawnSync(process.execPath, [entry, 'crawl', '--x'], { env, encoding: 'utf8' });
}

describe('onCrawlerNode', () => {
  it('goes on in place without CRAWLER_NODE, or when CRAWLER_NODE is this Node', () => {
    for (const value of [undefined, process.execPath]) {
      const r = run(value);
      expect(r.status, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual({ inPlace: true, args: ['crawl', '--x'] });
    }
  });

  it("starts again on another CRAWLER_NODE with the entry and its arguments, and exits with that run's code", () => {
    const other = join(dir, 'other-node');
    writeFileSync(other, '#!/bin/sh\necho "other node: $*"\nexit 7\n');
    chmodSync(other, 0o755);
    const r = run(other);
    expect(r.status).toBe(7);
    expect(r.stdout).toBe(`other node: ${entry} crawl --x\n`);
    expect(r.stderr).toContain(`running on the crawler's Node, ${other}`);
  });

  it('stops with exit code 2 and a message naming CRAWLER_NODE, not a stack, when it is not an executable file', () => {
    const r = run(join(dir, 'missing'));
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`bench: CRAWLER_NODE: "${join(dir, 'missing')}" is not an executable file`);
    expect(r.stderr).not.toContain('at crawlerNode');
    expect(r.stdout).toBe('');
  });
});
